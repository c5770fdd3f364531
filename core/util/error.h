// mirrorbench errors: every failure the user can cause or meet is an mb::Error with a
// message that names the problem (the file, the argument, the device). Library code throws;
// only the CLI's main and the GUI's worker boundary catch and report.
#pragma once
#include <stdexcept>
#include <string>
#include <fmt/format.h>

namespace mb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad data files: missing, truncated, corrupt, inconsistent.
class DataError : public Error {
 public:
  using Error::Error;
};

// Impossible configuration or bad argument (unknown device, batch < replicas, ...).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A device or its runtime failed (CUDA/cuDNN/NCCL error, replicas out of sync, ...).
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace mb

// MB_CHECK(cond, ErrorType, fmt, args...): throw ErrorType with a formatted message.
#define MB_CHECK(cond, ErrorType, ...)                      \
  do {                                                      \
    if (!(cond)) throw ErrorType(fmt::format(__VA_ARGS__)); \
  } while (0)
