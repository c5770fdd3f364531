// Atomic file replacement: a uniquely named temporary beside the target, written fully,
// fsync'ed, then renamed over the target (rename is atomic within one file system).
#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

[[noreturn]] void fail(const std::filesystem::path& file, const char* what, int err) {
  throw Error(fmt::format("cannot write '{}': {} failed: {}", file.string(), what, std::strerror(err)));
}

}  // namespace

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
