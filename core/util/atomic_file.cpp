// Atomic file replacement: a uniquely named temporary beside the target, written fully,
// fsync'ed, then renamed over the target (rename is atomic within one file system).
#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "util/error.h"

namespace mb {
namespace {

// Owns the temporary: closes the descriptor and removes the file unless committed, so
// every early throw leaves nothing behind.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) {
    // mkstemp picks a unique name, so concurrent writers of the same target never share a
    // temporary; the name stays beside the target so rename() never crosses file systems.
    std::string templ = target.string() + ".tmp.XXXXXX";
    fd_ = ::mkstemp(templ.data());
    if (fd_ < 0) {
      int err = errno;
      throw Error(fmt::format("cannot create a temporary file for '{}': {}", target.string(),
                              std::strerror(err)));
    }
    path_ = templ;
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Closes the descriptor; returns errno on failure (close can report delayed write errors).
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }
  void commit() { committed_ = true; }

 private:
  int fd_ = -1;
  std::string path_;
  bool committed_ = false;
};

constexpr std::string_view kTempInfix = ".tmp.";
constexpr std::size_t kTempSuffix = 6;   // mkstemp's XXXXXX

bool is_temp_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

[[noreturn]] void fail(const std::filesystem::path& file, const char* what, int err) {
  throw Error(fmt::format("cannot write '{}': {} failed: {}", file.string(), what, std::strerror(err)));
}

}  // namespace

bool is_atomic_temporary(std::string_view name) {
  if (name.size() < kTempInfix.size() + kTempSuffix + 1) return false;
  const std::string_view suffix = name.substr(name.size() - kTempSuffix);
  const std::string_view infix = name.substr(name.size() - kTempSuffix - kTempInfix.size(), kTempInfix.size());
  return infix == kTempInfix && std::all_of(suffix.begin(), suffix.end(), is_temp_char);
}

int remove_stale_temporaries(const std::filesystem::path& dir, std::string_view target_name,
                             std::chrono::seconds min_age) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_atomic_temporary(name)) continue;
    const std::string_view target = std::string_view(name).substr(0, name.size() - kTempSuffix - kTempInfix.size());
    if (!target_name.empty() && target != target_name) continue;
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || file_ec) continue;
    const auto mtime = fs::last_write_time(it->path(), file_ec);
    if (file_ec || now - mtime < min_age) continue;
    if (fs::remove(it->path(), file_ec) && !file_ec) ++removed;
  }
  return removed;
}

void write_file_atomic(const std::filesystem::path& file, std::string_view bytes) {
  MB_CHECK(!file.empty(), Error, "cannot write a file with an empty path");
  const std::filesystem::path parent = file.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec)
      throw Error(fmt::format("cannot write '{}': cannot create folder '{}': {}", file.string(),
                              parent.string(), ec.message()));
  }

  remove_stale_temporaries(parent, file.filename().string());
  TempFile tmp(file);
  // mkstemp creates 0600; records and checkpoints are meant to be shared like any other
  // output. 0644 rather than the umask default: reading the umask means setting it, which
  // is process-wide and would race with other threads creating files.
  ::fchmod(tmp.fd(), 0644);

  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(tmp.fd(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(file, "write", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // Data must be on disk before the rename publishes it, or a crash could leave an empty
  // file under the target's name.
  if (::fsync(tmp.fd()) != 0) fail(file, "fsync", errno);
  if (int err = tmp.close(); err != 0) fail(file, "close", err);
  if (::rename(tmp.path().c_str(), file.c_str()) != 0) fail(file, "rename", errno);
  tmp.commit();

  // Persist the directory entry too; failure here does not lose the data, so it is not fatal.
  int dir_fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace mb
