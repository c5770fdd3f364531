// `mirrorbench-cli selftest`: every available backend checked against the reference.
#pragma once

namespace mb::cli {

int cmd_selftest();  // 0 when every check passes, 1 on any mismatch

}  // namespace mb::cli
