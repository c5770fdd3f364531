// The JSON-lines progress stream (see progress_events.h).
#include "trainer/progress_events.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace mb {
namespace {

using nlohmann::json;

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "info";
}

LogLevel parse_level(const std::string& s) {
  if (s == "warning") return LogLevel::Warning;
  if (s == "error") return LogLevel::Error;
  return LogLevel::Info;
}

json detail_json(const StepDetail& d) {
  json replicas = json::array();
  for (const auto& r : d.replicas)
    replicas.push_back({{"share_begin", r.share_begin},
                        {"share_count", r.share_count},
                        {"loss", r.loss},
                        {"correct", r.correct},
                        {"grad_norm", r.grad_norm},
                        {"digest", r.digest},
                        {"phases", to_json(r.phases)}});
  return json{{"global_batch", d.global_batch},
              {"samples", d.samples},
              {"allreduce_bytes", d.allreduce_bytes},
              {"replicas", std::move(replicas)}};
}

StepDetail detail_from(const json& j) {
  StepDetail d;
  d.global_batch = j.at("global_batch").get<int64_t>();
  d.samples = j.at("samples").get<std::vector<int32_t>>();
  d.allreduce_bytes = j.at("allreduce_bytes").get<double>();
  for (const auto& r : j.at("replicas")) {
    ReplicaStepDetail x;
    x.share_begin = r.at("share_begin").get<int64_t>();
    x.share_count = r.at("share_count").get<int64_t>();
    x.loss = r.at("loss").is_null() ? std::nan("") : r.at("loss").get<double>();
    x.correct = r.at("correct").get<int64_t>();
    x.grad_norm = r.at("grad_norm").is_null() ? std::nan("") : r.at("grad_norm").get<double>();
    x.digest = r.at("digest").get<std::string>();
    x.phases = phase_times_from_json(r.at("phases"));
    d.replicas.push_back(std::move(x));
  }
  return d;
}

json step_json(const StepProgress& p) {
  json recent = json::array();
  for (const auto& report : p.recent) {
    json replicas = json::array();
    for (const auto& t : report) replicas.push_back(to_json(t));
    recent.push_back(std::move(replicas));
  }
  json epoch_times = json::array();
  for (const auto& t : p.epoch_times) epoch_times.push_back(to_json(t));
  json j{{"epoch", p.epoch},
              {"recent", std::move(recent)},
              {"epoch_times", std::move(epoch_times)},
              {"steps_per_report", p.steps_per_report},
              {"epochs", p.epochs},
              {"step", p.step},
              {"steps", p.steps},
              {"images_done", p.images_done},
              {"epoch_elapsed_s", p.epoch_elapsed_s},
              {"images_per_s", p.images_per_s},
              {"eta_s", p.eta_s},
              {"running_loss", p.running_loss},
              {"running_acc", p.running_acc}};
  if (p.has_detail) j["detail"] = detail_json(p.detail);
  return j;
}

StepProgress step_from(const json& j) {
  StepProgress p;
  p.epoch = j.at("epoch").get<int>();
  p.epochs = j.at("epochs").get<int>();
  p.step = j.at("step").get<int64_t>();
  p.steps = j.at("steps").get<int64_t>();
  p.images_done = j.at("images_done").get<int64_t>();
  p.epoch_elapsed_s = j.at("epoch_elapsed_s").get<double>();
  p.images_per_s = j.at("images_per_s").get<double>();
  p.eta_s = j.at("eta_s").get<double>();
  // NaN travels as null (JSON has no spelling for it): a diverged run's running loss.
  p.running_loss = j.at("running_loss").is_null() ? std::nan("") : j.at("running_loss").get<double>();
  p.running_acc = j.at("running_acc").get<double>();
  p.steps_per_report = j.value("steps_per_report", 1);
  if (j.contains("recent"))
    for (const auto& report : j.at("recent")) {
      std::vector<PhaseTimes> replicas;
      for (const auto& t : report) replicas.push_back(phase_times_from_json(t));
      p.recent.push_back(std::move(replicas));
    }
  if (j.contains("epoch_times"))
    for (const auto& t : j.at("epoch_times")) p.epoch_times.push_back(phase_times_from_json(t));
  if (j.contains("detail")) {
    p.has_detail = true;
    p.detail = detail_from(j.at("detail"));
  }
  return p;
}

}  // namespace

std::string to_json_line(const ProgressEvent& e) {
  json j;
  switch (e.kind) {
    case ProgressEvent::Kind::Start: j = {{"event", "start"}, {"config", to_json(e.config)}}; break;
    case ProgressEvent::Kind::Step: j = step_json(e.step), j["event"] = "step"; break;
    case ProgressEvent::Kind::Epoch: j = {{"event", "epoch"}, {"metrics", to_json(e.epoch)}}; break;
    case ProgressEvent::Kind::Log: j = {{"event", "log"}, {"level", level_name(e.level)}, {"line", e.line}}; break;
    case ProgressEvent::Kind::End: j = {{"event", "end"}, {"record", to_json(e.record)}}; break;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<ProgressEvent> parse_progress_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty() || line.front() != '{') return std::nullopt;
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("event"))
    throw DataError(fmt::format("progress stream: not an event: {}", line.substr(0, 200)));
  ProgressEvent e;
  try {
    const std::string kind = j.at("event").get<std::string>();
    if (kind == "start") {
      e.kind = ProgressEvent::Kind::Start;
      e.config = run_config_from_json(j.at("config"));
    } else if (kind == "step") {
      e.kind = ProgressEvent::Kind::Step;
      e.step = step_from(j);
    } else if (kind == "epoch") {
      e.kind = ProgressEvent::Kind::Epoch;
      e.epoch = epoch_metrics_from_json(j.at("metrics"));
    } else if (kind == "log") {
      e.kind = ProgressEvent::Kind::Log;
      e.level = parse_level(j.at("level").get<std::string>());
      e.line = j.at("line").get<std::string>();
    } else if (kind == "end") {
      e.kind = ProgressEvent::Kind::End;
      e.record = run_record_from_json(j.at("record"));
    } else {
      throw DataError(fmt::format("unknown event '{}'", kind));
    }
  } catch (const json::exception& ex) {
    throw DataError(fmt::format("progress stream: malformed event ({}): {}", ex.what(), line.substr(0, 200)));
  } catch (const DataError& ex) {
    throw DataError(fmt::format("progress stream: {}", ex.what()));
  }
  return e;
}

TrainObserver json_progress_observer(std::FILE* out) {
  auto emit = [out](const ProgressEvent& e) {
    const std::string text = to_json_line(e) + "\n";
    std::fwrite(text.data(), 1, text.size(), out);
    std::fflush(out);
  };
  TrainObserver o;
  o.on_start = [emit](const RunConfig& c) {
    ProgressEvent e;
    e.kind = ProgressEvent::Kind::Start;
    e.config = c;
    emit(e);
  };
  o.on_step = [emit](const StepProgress& p) {
    ProgressEvent e;
    e.kind = ProgressEvent::Kind::Step;
    e.step = p;
    emit(e);
  };
  o.on_epoch = [emit](const EpochMetrics& m) {
    ProgressEvent e;
    e.kind = ProgressEvent::Kind::Epoch;
    e.epoch = m;
    emit(e);
  };
  o.on_log = [emit](LogLevel level, const std::string& line) {
    ProgressEvent e;
    e.kind = ProgressEvent::Kind::Log;
    e.level = level;
    e.line = line;
    emit(e);
  };
  return o;
}

}  // namespace mb
