// Plans run back to back (see plan_executor.h).
#include "experiment/plan_executor.h"

#include <chrono>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "data/data_source.h"
#include "data/synthetic.h"
#include "config/train_options.h"
#include "records/chrome_trace.h"
#include "trainer/mirrored_trainer.h"
#include "util/error.h"

namespace mb {
namespace {

// A name the store never reads as a record (*.trace.json), unique to this run: the trace is
// written before the record's id is known and renamed beside the record afterwards.
std::filesystem::path pending_trace(const RunStore& store) {
  std::random_device rd;
  const uint64_t salt = (uint64_t(rd()) << 32) ^ uint64_t(rd()) ^
                        uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return store.runs_dir() / fmt::format("pending-{:016x}.trace.json", salt);
}

}  // namespace

// ---- in this process -----------------------------------------------------------------------

std::shared_ptr<const DataSplit> InProcessTrainer::data_for(const std::string& dir, const RunCallbacks& callbacks) {
  const std::string folder = data_source_label(dir);
  if (cached_data_ && cached_dir_ == folder) return cached_data_;
  if (callbacks.status) callbacks.status(fmt::format("Loading data set from {} ...", folder));
  const auto t0 = std::chrono::steady_clock::now();
  cached_data_.reset();   // free the old set before loading the next one
  cached_data_ = std::make_shared<const DataSplit>(load_data_source(folder));
  cached_dir_ = folder;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("Loaded {} ({} train, {} validation images) in {:.2f} s", folder, cached_data_->train.count,
               cached_data_->val.count, s);
  return cached_data_;
}

RunRecord InProcessTrainer::train(const PlannedRun& run, const RunCallbacks& callbacks,
                                  const std::filesystem::path& trace_file) {
  MB_CHECK(run.processes == 1, ConfigError, "a run of {} processes cannot train in this process", run.processes);
  MirroredTrainer trainer(run.config, data_for(run.config.data_dir, callbacks));   // throws: rejected
  {
    std::lock_guard lock(mutex_);
    active_ = &trainer;
    if (stop_.load()) trainer.request_stop();   // stop pressed while loading
  }
  if (callbacks.status) callbacks.status(fmt::format("Training on {} ...", format_devices(run.config.devices)));
  RunRecord record;
  try {
    record = trainer.run(callbacks.train);
  } catch (const std::exception& e) {
    // The trainer promises not to throw for device failures; anything else is still a failed
    // run with what is known, never an exception out of the plan.
    record.config = trainer.run_config();
    record.status = RunStatus::Failed;
    record.error = e.what();
    record.id = make_run_id(record.config);
  }
  {
    std::lock_guard lock(mutex_);
    active_ = nullptr;
  }
  // A failed run has no trace (its steps could not be gathered).
  if (!trace_file.empty() && !trainer.trace().empty()) {
    try {
      write_chrome_trace(trace_file, record, trainer.trace());
    } catch (const std::exception& e) {
      spdlog::warn("The run's trace was not written: {}", e.what());
    }
  }
  return record;
}

void InProcessTrainer::request_stop() {
  std::lock_guard lock(mutex_);
  stop_.store(true);
  if (active_) active_->request_stop();
}

// ---- the plan ------------------------------------------------------------------------------

PlanExecutor::PlanExecutor(std::optional<RunStore> store, RunTrainer& in_process, RunTrainer* multi_process)
    : store_(std::move(store)), in_process_(in_process), multi_process_(multi_process) {}

void PlanExecutor::request_stop() {
  std::lock_guard lock(mutex_);
  stop_.store(true);
  if (current_) current_->request_stop();
}

RunRecord PlanExecutor::train_one(int index, const PlannedRun& planned, RunTrainer& trainer,
                                  const PlanObserver& observer, std::string& save_error) {
  PlannedRun run = planned;
  std::filesystem::path trace;
  if (store_) {
    // Every run keeps its Chrome trace beside its record. Across machines process 0 may
    // write it on another host: it stays there.
    run.config.trace = true;
    std::error_code ec;
    std::filesystem::create_directories(store_->runs_dir(), ec);
    if (!ec && (run.processes == 1 || run.hostfile.empty())) trace = pending_trace(*store_);
  }
  RunCallbacks callbacks;
  callbacks.train.on_start = [&](const RunConfig& c) {
    if (observer.on_run_started) observer.on_run_started(index, c);
  };
  callbacks.train.on_step = [&](const StepProgress& p) {
    if (async_stop_.exchange(false)) request_stop();
    if (observer.on_step) observer.on_step(p);
  };
  callbacks.train.on_epoch = observer.on_epoch;
  callbacks.train.on_log = observer.on_log;
  callbacks.train.on_stuck = observer.on_stuck;
  callbacks.status = observer.on_status;
  {
    std::lock_guard lock(mutex_);
    current_ = &trainer;
    trainer.clear_stop();
    if (stop_.load()) trainer.request_stop();
  }
  struct Leave {
    PlanExecutor& e;
    ~Leave() {
      std::lock_guard lock(e.mutex_);
      e.current_ = nullptr;
    }
  } leave{*this};
  try {
    RunRecord record = trainer.train(run, callbacks, trace);
    save_error = keep(planned, record, trace);
    return record;
  } catch (...) {
    std::error_code ec;
    if (!trace.empty()) std::filesystem::remove(trace, ec);
    throw;
  }
}

// Names and saves a finished run, puts its trace beside it, and writes down its baseline: a
// completed baseline is pinned for its configuration; any other run keeps the baseline it is
// compared with now - the plan's own (Compare, Reference), else its configuration's - so a
// later baseline never re-scores it. Returns why it could not be saved (empty: saved).
std::string PlanExecutor::keep(const PlannedRun& run, RunRecord& record, const std::filesystem::path& trace) {
  if (namer_) record.name = namer_(record);
  if (!store_) return {};
  std::string error;
  try {
    store_->save(record);
    BaselineBook book = store_->load_book();
    if (run.role == RunRole::Baseline) {
      // Never a run whose scenario changes the math (balanced shares): it is no lock-step
      // run's baseline (baseline.h).
      if (record.status == RunStatus::Completed && can_be_baseline(record)) {
        book.pins[baseline_key(record.config)] = record.id;
        plan_baseline_ = record.id;
        store_->save_book(book);
      }
    } else {
      std::string baseline = plan_baseline_;
      if (baseline.empty()) {
        const RunStore::Loaded stored = store_->load_runs();
        if (const RunRecord* b = find_baseline(stored.runs, book, record.config); b && b->id != record.id)
          baseline = b->id;
      }
      if (!baseline.empty()) {
        book.compared[record.id] = baseline;
        store_->save_book(book);
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
    spdlog::error("Could not save run {}: {}", record.id, error);
  }
  std::error_code ec;
  if (!trace.empty() && std::filesystem::exists(trace, ec)) {
    std::filesystem::rename(trace, store_->trace_file_for(record.id), ec);
    if (ec) spdlog::warn("The run's trace stays at {}: {}", trace.string(), ec.message());
  }
  return error;
}

PlanOutcome PlanExecutor::run(const Plan& plan, const PlanObserver& observer) {
  PlanOutcome out;
  plan_baseline_.clear();
  out.kind = plan.kind;
  for (const std::string& note : plan.notes) log_line(TrainObserver{.on_log = observer.on_log}, LogLevel::Info, note);
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const int index = static_cast<int>(i);
    const PlannedRun& run = plan.runs[i];
    if (stop_.load() || async_stop_.load()) {
      out.stopped = true;
      break;
    }
    if (observer.on_run_starting) observer.on_run_starting(index, run);
    RunTrainer* trainer = run.processes > 1 ? multi_process_ : &in_process_;
    RunRecord record;
    std::string save_error;
    try {
      MB_CHECK(trainer != nullptr, ConfigError, "runs of {} processes are started by the workbench (mpirun): "
                                                "use mpirun ... mirrorbench-cli train",
               run.processes);
      record = train_one(index, run, *trainer, observer, save_error);
    } catch (const std::exception& e) {
      spdlog::error("Run not started: {}", e.what());
      if (observer.on_run_rejected) observer.on_run_rejected(index, e.what());
      out.ok = false;
      break;   // the rest would compare with nothing
    }
    out.records.push_back(record);
    if (record.status != RunStatus::Completed) out.ok = false;
    if (record.status == RunStatus::Stopped || stop_.load()) out.stopped = true;
    if (observer.on_run_finished) observer.on_run_finished(index, record, save_error);
    if (out.stopped) break;
    if (record.status == RunStatus::Failed && run.role == RunRole::Baseline) break;
  }
  if (out.records.size() < plan.runs.size()) out.ok = false;
  return out;
}

}  // namespace mb
