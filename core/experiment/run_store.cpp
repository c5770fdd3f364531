// Run persistence: plain files a user can copy, diff or delete by hand.
#include "experiment/run_store.h"

#include <cstdlib>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "util/atomic_file.h"
#include "util/error.h"

namespace mb {

std::filesystem::path default_history_root() {
  namespace fs = std::filesystem;
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* home = env("MIRRORBENCH_HOME")) return fs::path(home);
  if (const char* data = env("XDG_DATA_HOME")) return fs::path(data) / "mirrorbench" / "mirrorbench";
  if (const char* home = env("HOME")) return fs::path(home) / ".local" / "share" / "mirrorbench" / "mirrorbench";
  // No home at all: never fall back to the working directory silently.
  return fs::path("/tmp") / ".mirrorbench";
}

namespace fs = std::filesystem;

RunStore::RunStore(fs::path root) : root_(std::move(root)) {}

fs::path RunStore::file_for(const std::string& id) const {
  // Ids are generated file-name safe; refuse anything that could leave the folder.
  MB_CHECK(!id.empty() && id.find_first_of("/\\") == std::string::npos && id != "." && id != "..",
           Error, "invalid run id '{}'", id);
  return runs_dir() / (id + ".json");
}

fs::path RunStore::trace_file_for(const std::string& id) const {
  return file_for(id).replace_extension(".trace.json");
}

namespace {
bool is_trace_file(const fs::path& file) {
  const std::string name = file.filename().string();
  constexpr std::string_view kSuffix = ".trace.json";
  return name.size() > kSuffix.size() && name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}
}  // namespace

RunStore::Loaded RunStore::load_runs() const {
  Loaded out;
  std::error_code ec;
  if (!fs::is_directory(runs_dir(), ec)) return out;
  // Leftovers of writes killed before their rename ("<id>.json.tmp.XXXXXX", not listed below).
  remove_stale_temporaries(runs_dir());
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(runs_dir(), ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".json" && !is_trace_file(entry.path()))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    try {
      RunRecord r = read_run_json(file);
      // The file name is the run's identity in the store: rename/delete act on <id>.json, so
      // a hand-copied or hand-edited file (id "x/y", or a copy's id naming the original) must
      // not make Delete remove another run's file or throw from file_for().
      r.id = file.stem().string();
      out.runs.push_back(std::move(r));
    } catch (const std::exception& e) {
      out.warnings.push_back(fmt::format("Skipped run file {}: {}", file.string(), e.what()));
    }
  }
  std::stable_sort(out.runs.begin(), out.runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.config.start_time < b.config.start_time;
  });
  return out;
}

void RunStore::save(const RunRecord& record) const {
  std::error_code ec;
  fs::create_directories(runs_dir(), ec);
  MB_CHECK(!ec, Error, "cannot create {}: {}", runs_dir().string(), ec.message());
  write_run_json(record, file_for(record.id));
}

void RunStore::remove(const std::string& id) const {
  std::error_code ec;
  for (const fs::path& file : {file_for(id), trace_file_for(id)}) {
    fs::remove(file, ec);
    if (ec) spdlog::warn("Could not delete {}: {}", file.string(), ec.message());
  }
  // Its comparison goes with it (a comparison with it as the baseline falls back to the key's).
  BaselineBook book = load_book();
  if (book.compared.erase(id) > 0) {
    try {
      save_book(book);
    } catch (const std::exception& e) {
      spdlog::warn("Could not update the baseline book: {}", e.what());
    }
  }
}

BaselineBook RunStore::load_book(std::vector<std::string>* warnings) const {
  BaselineBook book;
  const fs::path file = root_ / "baselines.json";
  std::ifstream in(file);
  if (!in) return book;
  try {
    const auto j = nlohmann::json::parse(in);
    for (const auto& [key, id] : j.at("pins").items()) book.pins[key] = id.get<std::string>();
    if (j.contains("compared"))
      for (const auto& [run, id] : j.at("compared").items()) book.compared[run] = id.get<std::string>();
  } catch (const std::exception& e) {
    if (warnings) warnings->push_back(fmt::format("Ignored the baseline book in {}: {}", file.string(), e.what()));
    book = {};
  }
  return book;
}

void RunStore::save_book(const BaselineBook& book) const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  MB_CHECK(!ec, Error, "cannot create {}: {}", root_.string(), ec.message());
  nlohmann::json j;
  j["pins"] = nlohmann::json::object();
  for (const auto& [key, id] : book.pins) j["pins"][key] = id;
  j["compared"] = nlohmann::json::object();
  for (const auto& [run, id] : book.compared) j["compared"][run] = id;
  write_file_atomic(root_ / "baselines.json", j.dump(2) + "\n");
}

}  // namespace mb
