// Atomic file replacement: write a temporary file beside the target, fsync, rename.
// A crash or a full disk leaves the old file intact, never a half-written one.
#pragma once
#include <chrono>
#include <filesystem>
#include <string_view>

namespace mb {

// Before writing, removes stale temporaries of the same target (see below).
void write_file_atomic(const std::filesystem::path& file, std::string_view bytes);  // throws Error

// A writer killed between creating its temporary "<target>.tmp.XXXXXX" and renaming it leaves
// that file behind. Temporaries older than this are orphans: a live writer's temporary is at
// most one write-and-fsync old (its mtime moves with every write), so age alone tells them
// apart, without pids (reused, and meaningless for another machine sharing the folder) or
// lock files (which a kill would orphan just the same).
inline constexpr std::chrono::minutes kStaleTemporaryAge{10};

// Removes write_file_atomic's temporaries in `dir` that are at least `min_age` old: those of
// `target_name` (a file name in `dir`) only, or of every target when it is empty. Returns how
// many were removed; never throws (a file that cannot be removed is left for next time).
int remove_stale_temporaries(const std::filesystem::path& dir, std::string_view target_name = {},
                             std::chrono::seconds min_age = kStaleTemporaryAge);

// Whether `file_name` has the form of one of write_file_atomic's temporaries.
bool is_atomic_temporary(std::string_view file_name);

}  // namespace mb
