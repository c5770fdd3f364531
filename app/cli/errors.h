// How mirrorbench-cli reports an exception: one line on stderr naming the problem, and the
// exit code for it (2: bad arguments or data; 1: anything else, a failed run included).
#pragma once
#include <exception>
#include <string>

namespace mb::cli {

// `where` (e.g. "process 1 of 2 on host vm") prefixes the message when not empty.
int report_error(const std::exception& e, const std::string& where = {});

}  // namespace mb::cli
