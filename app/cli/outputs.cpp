// Writing a run's outputs so that one failure loses nothing else (see outputs.h).
#include "outputs.h"

#include <unistd.h>

#include <exception>
#include <filesystem>
#include <functional>
#include <new>

#include <fmt/format.h>

#include "records/checkpoint.h"
#include "util/error.h"

namespace mb::cli {

void check_writable(const char* flag, const std::string& file) {
  if (file.empty()) return;
  namespace fs = std::filesystem;
  const fs::path path = fs::absolute(file);
  std::error_code ec;
  MB_CHECK(!fs::is_directory(path, ec), ConfigError, "{} {}: is a folder, not a file", flag, file);
  fs::path dir = path.parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  MB_CHECK(fs::is_directory(dir, ec), ConfigError, "{} {}: {} is not a folder", flag, file, dir.string());
  // Try it: permission bits do not tell (root, read-only mounts, /proc).
  std::string probe = (dir / ".mirrorbench-probe-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  MB_CHECK(fd >= 0, ConfigError, "{} {}: cannot write into {}", flag, file, dir.string());
  close(fd);
  unlink(probe.c_str());
}

void check_writable(const RunOutputs& o) {
  check_writable("--save", o.checkpoint);
  check_writable("--json", o.json);
  check_writable("--csv", o.csv);
}

std::vector<OutputResult> write_outputs(const RunOutputs& o, const RunRecord& record,
                                        std::span<const float> params) {
  std::vector<OutputResult> results;
  auto attempt = [&](const char* flag, const std::string& path, const std::function<void()>& write) {
    if (path.empty()) return;
    OutputResult r{flag, path, {}};
    try {
      write();
    } catch (const std::bad_alloc&) {
      r.error = "out of memory";
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    results.push_back(std::move(r));
  };
  attempt("--save", o.checkpoint, [&] {
    MB_CHECK(!params.empty(), Error, "the run ended before it had weights");
    save_checkpoint(o.checkpoint, record.config.model, params,
                    {{"run_id", record.id},
                     {"devices", record.config.devices_text()},
                     {"status", std::string(to_string(record.status))},
                     {"epochs", std::to_string(record.epochs.size())},
                     {"format", "pt"}});
  });
  attempt("--json", o.json, [&] { write_run_json(record, o.json); });
  attempt("--csv", o.csv, [&] { write_runs_csv(std::span<const RunRecord>(&record, 1), o.csv); });
  return results;
}

int report_outputs(const std::vector<OutputResult>& results, const std::string& run_id, std::FILE* out,
                   std::FILE* err) {
  int failed = 0;
  std::vector<std::string> written;
  for (const auto& r : results) {
    if (r.error.empty()) {
      written.push_back(r.path);
    } else {
      ++failed;
      fmt::print(err, "mirrorbench-cli: {} {} was not written: {}\n", r.flag, r.path, r.error);
    }
  }
  if (!written.empty()) fmt::print(out, "run {}: wrote {}\n", run_id, fmt::join(written, ", "));
  std::fflush(out);
  std::fflush(err);
  return failed;
}

}  // namespace mb::cli
