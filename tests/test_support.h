// Shared helpers for the test executables (header-only, small).
#pragma once
#include <QDebug>
#include <QString>
#include <QStringList>

#include <cxxabi.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <cstdint>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <functional>
#include <mutex>
#include <thread>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "data/data_source.h"
#include "data/synthetic.h"
#include "model/model_spec.h"
#include "util/random.h"
#include "util/tolerance.h"

namespace mb::test {

// A learnable in-memory data set: each class draws a bright bar at its own position on
// noise, so a few steps of training visibly raise accuracy. Deterministic for a seed.
inline Dataset make_synthetic_dataset(int64_t count, uint64_t seed, std::string name = "synthetic") {
  Dataset d;
  d.name = std::move(name);
  d.count = count;
  d.rows = d.cols = 28;
  d.pixels.resize(static_cast<std::size_t>(count) * 784);
  d.labels.resize(static_cast<std::size_t>(count));
  SplitMix64 rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int label = static_cast<int>(rng.below(10));
    d.labels[i] = static_cast<uint8_t>(label);
    uint8_t* img = d.pixels.data() + i * 784;
    for (int p = 0; p < 784; ++p) img[p] = static_cast<uint8_t>(rng.below(64));
    const int row = 2 + label * 2;
    for (int c = 4; c < 24; ++c) img[row * 28 + c] = static_cast<uint8_t>(192 + rng.below(64));
  }
  return d;
}

inline std::shared_ptr<DataSplit> make_synthetic_split(int64_t n_train, int64_t n_val, uint64_t seed = 7) {
  auto s = std::make_shared<DataSplit>();
  s->name = "synthetic";
  s->dir = "(memory)";
  s->train = make_synthetic_dataset(n_train, seed, "synthetic/train");
  s->val = make_synthetic_dataset(n_val, seed + 1, "synthetic/val");
  return s;
}

// Labelled images of `model`'s input shape and class count (data/synthetic.h), for models
// other than the reference's 28x28x1.
inline std::shared_ptr<DataSplit> make_model_split(const ModelSpec& model, int64_t n_train, int64_t n_val,
                                                   uint64_t seed = 7) {
  const SyntheticSpec spec{model.input(), model.classes()};
  auto s = std::make_shared<DataSplit>();
  s->name = "synthetic";
  s->dir = "(memory)";
  s->train = make_synthetic_images(spec, n_train, seed, "synthetic/train");
  s->val = make_synthetic_images(spec, n_val, seed + 1, "synthetic/val");
  return s;
}

// Writes `d` as raw (uncompressed) IDX files <prefix>-images-idx3-ubyte / -labels-idx1-ubyte.
inline void write_idx(const std::filesystem::path& dir, const std::string& prefix, const Dataset& d) {
  auto be32 = [](std::FILE* f, uint32_t v) {
    const unsigned char b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
    std::fwrite(b, 1, 4, f);
  };
  std::FILE* f = std::fopen((dir / (prefix + "-images-idx3-ubyte")).c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write test data in " + dir.string());
  be32(f, 0x803), be32(f, uint32_t(d.count)), be32(f, uint32_t(d.rows)), be32(f, uint32_t(d.cols));
  std::fwrite(d.pixels.data(), 1, d.pixels.size(), f);
  std::fclose(f);
  f = std::fopen((dir / (prefix + "-labels-idx1-ubyte")).c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write test data in " + dir.string());
  be32(f, 0x801), be32(f, uint32_t(d.count));
  std::fwrite(d.labels.data(), 1, d.labels.size(), f);
  std::fclose(f);
}

// A synthetic data set in the MNIST folder layout (train + t10k), for end-to-end tests.
inline void write_synthetic_idx_dir(const std::filesystem::path& dir, int64_t n_train, int64_t n_val) {
  std::filesystem::create_directories(dir);
  auto split = make_synthetic_split(n_train, n_val);
  write_idx(dir, "train", split->train);
  write_idx(dir, "t10k", split->val);
}

// A type's readable name ("mb::DataError"), for messages.
inline QString type_name(const std::type_info& t) {
  int status = 0;
  char* name = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  const QString out = QString::fromUtf8(status == 0 && name != nullptr ? name : t.name());
  std::free(name);
  return out;
}

// The outcome of expect_error: true when the right error came with every expected text; the
// message either way (empty when nothing was thrown), for further checks or qInfo.
struct ErrorCheck {
  bool ok = false;
  QString message;
  explicit operator bool() const { return ok; }
};

// Runs fn(), which must throw E (or a subclass) whose what() contains each of `texts`.
// On a mismatch it says what happened instead (nothing thrown, another exception, a message
// lacking a text) through qWarning, so one line at the call site states the whole check:
//   QVERIFY(test::expect_error<DataError>([&] { load(file); }, {file_name, "truncated"}));
template <typename E, typename Fn>
ErrorCheck expect_error(Fn&& fn, std::initializer_list<QString> texts) {
  ErrorCheck check;
  const QString expected = type_name(typeid(E));
  try {
    fn();
    qWarning().noquote() << "expected an exception" << expected << "containing" << QStringList(texts)
                         << "but nothing was thrown";
    return check;
  } catch (const E& e) {
    check.message = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    qWarning().noquote() << "expected an exception" << expected << "but got" << type_name(typeid(e)) << ":" << e.what();
    return check;
  } catch (...) {
    qWarning().noquote() << "expected an exception" << expected << "but got a non-std exception";
    return check;
  }
  check.ok = true;
  for (const QString& text : texts) {
    if (!check.message.contains(text)) {
      qWarning().noquote() << "the message lacks" << ("'" + text + "'") << ":" << check.message;
      check.ok = false;
    }
  }
  return check;
}

template <typename E, typename Fn>
ErrorCheck expect_error(Fn&& fn, const QString& text) {
  return expect_error<E>(std::forward<Fn>(fn), {text});
}

// The file-name form of a path, for expected texts.
inline QString text_of(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

// Whole-file byte I/O for tests that craft or inspect files (IDX, JSON, safetensors).
inline void write_bytes(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("test: cannot write " + file.string());
}
inline std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("test: cannot read " + file.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs fn on its own thread and ends the whole test binary (exit code 3) if it has not
// returned within `seconds`: a hang is the failure such tests look for, and a hung thread
// could not be joined. Rethrows what fn threw.
inline void finishes_within(double seconds, const std::function<void()>& fn) {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr error;
  };
  auto state = std::make_shared<State>();
  std::thread([state, fn] {
    std::exception_ptr error;
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(state->m);
    state->done = true;
    state->error = error;
    state->cv.notify_all();
  }).detach();
  std::unique_lock lock(state->m);
  if (!state->cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return state->done; })) {
    std::fprintf(stderr, "FAIL: still running after %.0f s: hung\n", seconds);
    std::fflush(stderr);
    std::_Exit(3);
  }
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace mb::test
