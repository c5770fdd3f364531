// The main window driven the way a user drives it, for the GUI tests: a private history folder
// and a tiny synthetic IDX folder per test program, a fresh window per test, the setup panel
// filled through its widgets, and a button clicked with a wait for the plan to end.
//
// A plain member of the QObject test class rather than its base: QtTest would take a base
// class's slots for test functions. Helpers return what went wrong instead of using QVERIFY,
// which only works in a test function's own frame.
#pragma once
#include <QComboBox>
#include <QDir>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "app/main_window.h"
#include "history/history_model.h"
#include "records/run_record.h"
#include "setup/run_setup_panel.h"
#include "test_support.h"

namespace mb::test {

// The run records in a store's runs/ folder (not the Chrome traces kept beside them).
inline std::set<std::filesystem::path> run_record_paths(const std::filesystem::path& dir) {
  std::set<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool trace = name.size() > 11 && name.compare(name.size() - 11, 11, ".trace.json") == 0;
    if (e.path().extension() == ".json" && !trace) files.insert(e.path());
  }
  return files;
}

// What the setup panel is filled with; -1 leaves a widget as the panel set it.
struct PanelSettings {
  int epochs = 1;
  int replicas = 1;     // "cpu_replicas"
  int batch = 64;       // "batch_preset"
  int seed = -1;        // "seed"
  int processes = -1;   // "processes"
};

class WindowFixture {
 public:
  WindowFixture(int train_images, int val_images) : train_(train_images), val_(val_images) {}

  // For initTestCase: MIRRORBENCH_HOME points at a fresh folder and the data set is written.
  // Returns what failed, empty when all is well.
  QString prepare() {
    if (!home.isValid() || !scratch.isValid()) return "no temporary folder";
    qputenv("MIRRORBENCH_HOME", home.path().toUtf8());
    data_dir = QDir::cleanPath(scratch.path() + "/tiny-idx");
    write_synthetic_idx_dir(data_dir.toStdString(), train_, val_);
    return {};
  }

  // A new window, shown; false when it was never exposed.
  bool open_window() {
    window = std::make_unique<MainWindow>();
    window->show();
    return QTest::qWaitForWindowExposed(window.get());
  }

  void close_window() { window.reset(); }

  // Fills the panel as a user would (the data folder as if chosen by Browse, the sample
  // limits the fixture's data set). Returns the panel's problems, empty when it accepts.
  QString fill(const PanelSettings& s) {
    RunSetupPanel* p = window->setup_panel();
    auto* data = p->findChild<QComboBox*>("data_combo");
    p->set_recent_data_dirs({data_dir});
    data->setCurrentIndex(data->findData(data_dir));
    if (data->currentData().toString() != data_dir) return "the data folder was not selected: " + data_dir;
    p->findChild<QSpinBox*>("cpu_replicas")->setValue(s.replicas);
    auto* preset = p->findChild<QComboBox*>("batch_preset");
    preset->setCurrentIndex(preset->findData(s.batch));
    p->findChild<QSpinBox*>("epochs")->setValue(s.epochs);
    p->findChild<QSpinBox*>("limit_train")->setValue(train_);
    p->findChild<QSpinBox*>("limit_val")->setValue(val_);
    if (s.seed >= 0) p->findChild<QSpinBox*>("seed")->setValue(s.seed);
    if (s.processes >= 0) p->findChild<QSpinBox*>("processes")->setValue(s.processes);
    return p->problems().join("; ");
  }

  // Clicks a setup-panel button and waits for the plan it starts to end: the newest run in
  // the history, or an empty record when the button was disabled or the wait ran out.
  RunRecord click_and_wait(const char* button, int timeout_ms) {
    QSignalSpy done(window.get(), &MainWindow::plan_done);
    auto* b = window->findChild<QPushButton*>(button);
    if (!b || !b->isEnabled()) return {};
    QTest::mouseClick(b, Qt::LeftButton);
    if (!done.wait(timeout_ms)) return {};
    return last_record();
  }

  RunRecord last_record() const {
    return window->history()->runs().empty() ? RunRecord{} : window->history()->runs().back();
  }

  QTemporaryDir home;      // MIRRORBENCH_HOME: settings and the run history
  QTemporaryDir scratch;   // the data set and whatever else a test writes
  QString data_dir;
  std::unique_ptr<MainWindow> window;

 private:
  int train_, val_;
};

}  // namespace mb::test
