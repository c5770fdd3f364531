// The configuration of a scripted run (see script_options.h).
#include "app/script_options.h"

#include "config/train_options.h"

namespace mb {

TrainConfig scripted_config(const ScriptOptions& o, const TrainConfig& panel, int processes,
                            const DeviceList& all_devices) {
  TrainConfig c = o.kind == PlanKind::Reference && o.start ? reference_request(panel, processes, all_devices) : panel;
  for (const std::string& key : o.given_keys) {
    const TrainOption& option = train_option(key);
    set_option(option, c, option_text(option, o.given));
  }
  return c;
}

}  // namespace mb
