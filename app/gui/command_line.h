// The workbench's command line, read with CLI11 before QApplication exists (so --help and
// --version need no display), its training flags with the same code as mirrorbench-cli's
// (app/options/train_flags.h). Qt's own options (-platform, -style, ...) are left for
// QApplication; anything else it does not know is a usage error, also without a display.
#pragma once
#include "app/script_options.h"

namespace mb {

struct GuiCommandLine {
  bool done = false;                 // --help or --version was printed: exit 0
  bool scripted = false;             // any option that drives the window (else: just open it)
  ScriptOptions script;
};

// Throws ConfigError with one line naming the option for a bad command line.
GuiCommandLine parse_gui_command_line(int argc, char** argv);

}  // namespace mb
