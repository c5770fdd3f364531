// "engine": {"path", "graph_batches", "eager_batches", "graph_steps", "eager_steps",
// "graph_nodes": {...}, "conv": [...]}.
#include "records/engine_report_json.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace mb {
namespace {

using nlohmann::json;

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw DataError(fmt::format("field '{}' is {}, expected an object", where, j.type_name()));
  const auto it = j.find(key);
  if (it == j.end()) throw DataError(fmt::format("field '{}.{}' is missing", where, key));
  return *it;
}

template <typename T>
T typed(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    throw DataError(fmt::format("field '{}.{}' is {}, not the expected type", where, key, v.type_name()));
  }
}

json nodes_to_json(const GraphNodes& n) {
  return json{
      {"kernel", n.kernel}, {"memset", n.memset}, {"memcpy", n.memcpy}, {"other", n.other}, {"total", n.total()}};
}

json conv_to_json(const ConvChoice& c) {
  return json{{"pass", c.pass},           {"batch", c.batch},        {"algo", c.algo},
              {"algo_name", c.algo_name}, {"math", c.math},          {"workspace_bytes", c.workspace_bytes},
              {"time_us", c.time_us},     {"chosen_by", c.chosen_by}};
}

ConvChoice conv_from_json(const json& j, const std::string& w) {
  ConvChoice c;
  c.pass = typed<std::string>(j, "pass", w);
  c.batch = typed<int64_t>(j, "batch", w);
  c.algo = typed<int>(j, "algo", w);
  c.algo_name = typed<std::string>(j, "algo_name", w);
  c.math = typed<std::string>(j, "math", w);
  c.workspace_bytes = typed<int64_t>(j, "workspace_bytes", w);
  c.time_us = typed<double>(j, "time_us", w);
  c.chosen_by = typed<std::string>(j, "chosen_by", w);
  return c;
}

}  // namespace

json to_json(const EngineReport& r) {
  json conv = json::array();
  for (const auto& c : r.conv) conv.push_back(conv_to_json(c));
  return json{{"path", r.path},
              {"graph_batches", r.graph_batches},
              {"eager_batches", r.eager_batches},
              {"graph_steps", r.graph_steps},
              {"eager_steps", r.eager_steps},
              {"graph_nodes", nodes_to_json(r.nodes)},
              {"conv", std::move(conv)}};
}

EngineReport engine_report_from_json(const json& j, bool with_step_counts) {
  const std::string w = "engine";
  EngineReport r;
  r.path = typed<std::string>(j, "path", w);
  r.graph_batches = typed<std::vector<int64_t>>(j, "graph_batches", w);
  r.eager_batches = typed<std::vector<int64_t>>(j, "eager_batches", w);
  if (with_step_counts || j.contains("graph_steps")) r.graph_steps = typed<int64_t>(j, "graph_steps", w);
  if (with_step_counts || j.contains("eager_steps")) r.eager_steps = typed<int64_t>(j, "eager_steps", w);
  for (const auto& [key, count] : {std::pair{"graph_steps", r.graph_steps}, {"eager_steps", r.eager_steps}})
    if (count < -1) throw DataError(fmt::format("field 'engine.{}' is {}: a count, or -1 (not counted)", key, count));
  const json& n = member(j, "graph_nodes", w);
  const std::string wn = w + ".graph_nodes";
  r.nodes.kernel = typed<int>(n, "kernel", wn);
  r.nodes.memset = typed<int>(n, "memset", wn);
  r.nodes.memcpy = typed<int>(n, "memcpy", wn);
  r.nodes.other = typed<int>(n, "other", wn);
  const json& conv = member(j, "conv", w);
  if (!conv.is_array()) throw DataError(fmt::format("field 'engine.conv' is {}, expected an array", conv.type_name()));
  for (std::size_t i = 0; i < conv.size(); ++i)
    r.conv.push_back(conv_from_json(conv[i], fmt::format("engine.conv[{}]", i)));
  return r;
}

}  // namespace mb
