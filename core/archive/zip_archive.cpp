// Zip archives within limits (see zip_archive.h), on libzip.
#include "archive/zip_archive.h"

#include <zip.h>

#include <algorithm>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {

struct ZipArchive::Handle {
  zip_t* zip = nullptr;
  ~Handle() {
    if (zip) zip_discard(zip);   // read-only: nothing to write back
  }
};

namespace {

std::string libzip_error(zip_error_t* error) {
  std::string why = zip_error_strerror(error);
  zip_error_fini(error);
  return why;
}

}  // namespace

ZipArchive::ZipArchive(const std::filesystem::path& path, ZipLimits limits)
    : name_(path.string()), limits_(limits), zip_(std::make_unique<Handle>()) {
  std::error_code ec;
  MB_CHECK(std::filesystem::is_regular_file(path, ec), DataError, "{}: no such file", name_);
  archive_bytes_ = std::filesystem::file_size(path, ec);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_file_create(name_.c_str(), 0, -1, &error);   // -1: to the end
  MB_CHECK(source != nullptr, DataError, "{}: cannot be read ({})", name_, libzip_error(&error));
  open_checked(source);
}

ZipArchive::ZipArchive(std::string bytes, std::string name, ZipLimits limits)
    : name_(std::move(name)), limits_(limits), bytes_(std::move(bytes)), archive_bytes_(bytes_.size()),
      zip_(std::make_unique<Handle>()) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes_.data(), bytes_.size(), 0, &error);
  MB_CHECK(source != nullptr, DataError, "{}: cannot be read ({})", name_, libzip_error(&error));
  open_checked(source);
}

ZipArchive::~ZipArchive() = default;

void ZipArchive::open_checked(void* source_ptr) {
  auto* source = static_cast<zip_source_t*>(source_ptr);
  zip_error_t error;
  zip_error_init(&error);
  zip_->zip = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!zip_->zip) {
    zip_source_free(source);
    throw DataError(fmt::format("{}: not a readable zip archive ({})", name_, libzip_error(&error)));
  }
  zip_error_fini(&error);
  const zip_int64_t count = zip_get_num_entries(zip_->zip, 0);
  MB_CHECK(count >= 0 && count <= limits_.max_entries, DataError, "{}: {} entries, more than the {} allowed", name_,
           count, limits_.max_entries);
}

std::vector<std::string> ZipArchive::entries() const {
  std::vector<std::string> out;
  const zip_int64_t count = zip_get_num_entries(zip_->zip, 0);
  for (zip_int64_t i = 0; i < count; ++i)
    if (const char* n = zip_get_name(zip_->zip, zip_uint64_t(i), ZIP_FL_ENC_GUESS)) out.emplace_back(n);
  return out;
}

bool ZipArchive::contains(std::string_view entry) const {
  return zip_name_locate(zip_->zip, std::string(entry).c_str(), ZIP_FL_ENC_GUESS) >= 0;
}

std::string ZipArchive::read(std::string_view entry) const {
  const std::string e(entry);
  const zip_int64_t index = zip_name_locate(zip_->zip, e.c_str(), ZIP_FL_ENC_GUESS);
  MB_CHECK(index >= 0, DataError, "{}: no entry '{}'", name_, e);
  zip_stat_t st;
  zip_stat_init(&st);
  MB_CHECK(zip_stat_index(zip_->zip, zip_uint64_t(index), 0, &st) == 0, DataError, "{}: entry '{}' unreadable ({})",
           name_, e, zip_strerror(zip_->zip));
  MB_CHECK(!(st.valid & ZIP_STAT_ENCRYPTION_METHOD) || st.encryption_method == ZIP_EM_NONE, DataError,
           "{}: entry '{}' is encrypted", name_, e);
  const auto limit = uint64_t(limits_.max_entry_bytes);
  MB_CHECK((st.valid & ZIP_STAT_SIZE) && st.size <= limit, DataError,
           "{}: entry '{}' declares {} bytes, more than the {} allowed", name_, e, st.size, limit);
  // A compressed entry may inflate to ratio x its stored bytes at most: a zip bomb stops at
  // that bound however large it claims (or does not claim) to grow.
  const uint64_t stored = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
  MB_CHECK(stored <= archive_bytes_, DataError, "{}: entry '{}' claims {} stored bytes in an archive of {}", name_, e,
           stored, archive_bytes_);
  const bool compressed = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method != ZIP_CM_STORE;
  // A stored entry's bytes are its stored bytes: one that claims more lies (and would size the
  // buffer below from a small archive).
  const uint64_t bound =
      compressed ? std::min<uint64_t>(limit, uint64_t(double(std::max<uint64_t>(stored, 1)) * limits_.max_ratio))
                 : std::min<uint64_t>(limit, (st.valid & ZIP_STAT_COMP_SIZE) ? stored : limit);
  MB_CHECK(st.size <= bound, DataError, "{}: entry '{}' would inflate {} stored bytes to {}, past the {:.0f}:1 allowed",
           name_, e, stored, st.size, limits_.max_ratio);
  zip_file_t* file = zip_fopen_index(zip_->zip, zip_uint64_t(index), 0);
  MB_CHECK(file != nullptr, DataError, "{}: entry '{}' cannot be opened ({})", name_, e, zip_strerror(zip_->zip));
  std::string out;
  out.resize(std::size_t(st.size));
  std::size_t got = 0;
  char probe = 0;
  zip_int64_t n = 0;
  std::string failure;
  while (got < out.size() && (n = zip_fread(file, out.data() + got, out.size() - got)) > 0) got += std::size_t(n);
  if (n < 0) failure = zip_file_strerror(file);
  // An entry that inflates past its declared size is corrupt or hostile: one more byte tells.
  else if (zip_fread(file, &probe, 1) > 0) failure = "more bytes than its header declares";
  zip_fclose(file);
  MB_CHECK(failure.empty(), DataError, "{}: entry '{}' is corrupt: {}", name_, e, failure);
  MB_CHECK(got == out.size(), DataError, "{}: entry '{}' ends after {} of its {} bytes", name_, e, got, out.size());
  return out;
}

std::string ZipArchive::read_prefix(std::string_view entry, std::size_t max_bytes) const {
  const std::string e(entry);
  const zip_int64_t index = zip_name_locate(zip_->zip, e.c_str(), ZIP_FL_ENC_GUESS);
  MB_CHECK(index >= 0, DataError, "{}: no entry '{}'", name_, e);
  zip_file_t* file = zip_fopen_index(zip_->zip, zip_uint64_t(index), 0);
  MB_CHECK(file != nullptr, DataError, "{}: entry '{}' cannot be opened ({})", name_, e, zip_strerror(zip_->zip));
  std::string out(max_bytes, '\0');
  std::size_t got = 0;
  zip_int64_t n = 0;
  while (got < out.size() && (n = zip_fread(file, out.data() + got, out.size() - got)) > 0) got += std::size_t(n);
  const std::string failure = n < 0 ? zip_file_strerror(file) : "";
  zip_fclose(file);
  MB_CHECK(failure.empty(), DataError, "{}: entry '{}' is corrupt: {}", name_, e, failure);
  out.resize(got);
  return out;
}

}  // namespace mb
