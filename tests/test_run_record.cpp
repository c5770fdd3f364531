// Tests of run records: JSON round trip of every field, DataErrors naming the field and the
// file for corrupt records, atomic writes, run ids, and the CSV export parsed back exactly.
#include <QtTest>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "config/train_options.h"
#include "model/model_text.h"
#include "records/run_record.h"
#include "test_support.h"
#include "util/atomic_file.h"
#include "util/error.h"

using namespace mb;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every field differs from its default, so a field dropped on either side shows.
RunRecord full_record() {
  RunRecord r;
  r.id = "20261130T063221Z-cuda0_1-1a2b";
  r.name = "big batch, \"scaled\" lr\nsecond line ü";
  RunConfig& c = r.config;
  c.model = reference_family(4096);   // not the default, and a model this version knows
  c.devices = parse_devices("cuda:0,cuda:1");
  c.replicas = 4;
  c.processes = 2;
  c.replicas_per_process = 2;
  c.hosts = {"node-a", "node-b"};
  c.simulated = true;
  c.scenario.straggler.replica = 3;
  c.scenario.straggler.factor = 2.5;
  c.step_delay_s = 0.75;
  c.scenario.balance = true;
  c.scenario.shares_from = "/runs/balanced, \"old\".json";
  c.share_changes = {{0, {256, 256, 256, 256}}, {17, {320, 256, 256, 192}}, {40, {384, 256, 256, 128}}};
  c.scenario.link.gbit = 10;
  c.scenario.link.latency_us = 25;
  c.scenario.accumulate = 4;
  c.scenario.lr_warmup_epochs = 1.5;
  c.scenario.allreduce_dtype = WireDtype::Bf16;
  c.scenario.bucket_mb = 25;
  c.scenario.powersgd_rank = 4;
  c.engine = {Conv2Kernel::Onednn, "avx2", CudaPath::Fused, 1.5, {FaultKind::Abort, 3, 1}, "sse4", false};
  c.kernels = "Highway sse4, oneDNN avx2, conv2 onednn";
  c.global_batch = 1024;
  c.per_replica_batch = 256;
  c.per_replica_batch_mode = true;
  c.epochs = 3;
  c.base_learning_rate = 1e-3;
  c.learning_rate = 0.1 + 0.2;                         // not exactly 0.3: needs full precision
  c.scale_lr = true;
  c.seed = std::numeric_limits<uint64_t>::max() - 5;   // above int64's range
  c.dataset = "fashion-mnist";
  c.data_dir = "/data/fashion, mnist";
  c.train_size = 60000;
  c.val_size = 10000;
  c.backend = Backend::Cuda;
  c.precision = Precision::Tf32;
  c.communicator = "in-gpu (simulated)";
  c.version = "0.1.0";
  c.cpu_model = "AMD EPYC 7B13";
  c.gpu_models = {"NVIDIA H200", "NVIDIA H100"};
  c.start_time = "2026-11-30T06:32:21Z";
  for (int e = 1; e <= 3; ++e) {
    EpochMetrics m;
    m.epoch = e;
    m.time_s = 12.5 / 3 + e;
    m.allreduce_s = 1.0 / 7 * e;
    m.train_loss = 0.6 / e;
    m.train_acc = 0.8 + 0.01 * e;
    m.val_loss = 0.55 / e + 1e-17;
    m.val_acc = 0.85 + 0.013 * e;
    m.images_per_s = 60000 / m.time_s;
    for (int q = 0; q < 4; ++q) {
      PhaseTimes t;   // every category its own value, none a round number
      for (int c = 0; c < int(time_categories().size()); ++c) t[c] = 0.1 * e + q + 1.0 / (3 + c + q);
      m.replica_times.push_back(t);
    }
    m.param_digest = "0123456789abcdef";
    r.epochs.push_back(m);
  }
  r.warmup_s = 0.4 + 1e-9;
  r.comm.replicas = 4;
  r.comm.bytes = 487720;
  r.comm.buckets = 2;
  r.comm.allreduce_s = 1.7e-5;
  r.comm.algbw_gbs = 487720 / 1.7e-5 / 1e9;
  r.comm.busbw_gbs = r.comm.algbw_gbs * 1.5;
  r.comm.step_s = 6.1e-5;
  r.comm.step_no_comm_s = 5.9e-5;
  r.comm.exposed_s = r.comm.step_s - r.comm.step_no_comm_s;
  r.engine.path = "cudnn";
  r.engine.graph_batches = {128};
  r.engine.eager_batches = {96};
  r.engine.graph_steps = 2344;
  r.engine.eager_steps = 1;
  r.engine.nodes = {21, 1, 0, 2};
  r.engine.conv.push_back({"conv1 weight gradient", 128, 1, "ALGO_1", "fma", 4096, 35.25, "measured"});
  r.engine.conv.push_back({"conv2 forward", 128, 6, "WINOGRAD", "default", 0, -1, "heuristic"});
  r.replicas_in_sync = false;
  r.status = RunStatus::Failed;
  r.error = "CUDA error: out of memory";
  return r;
}

void check_equal(const RunRecord& a, const RunRecord& b) {
  QCOMPARE(a.id, b.id);
  QCOMPARE(a.name, b.name);
  const RunConfig &x = a.config, &y = b.config;
  QCOMPARE(x.model, y.model);
  QCOMPARE(x.devices, y.devices);
  QCOMPARE(x.replicas, y.replicas);
  QCOMPARE(x.processes, y.processes);
  QCOMPARE(x.replicas_per_process, y.replicas_per_process);
  QVERIFY(x.hosts == y.hosts);
  QCOMPARE(x.scenario.straggler.replica, y.scenario.straggler.replica);
  QVERIFY(same_bits(x.scenario.straggler.factor, y.scenario.straggler.factor));
  QVERIFY(same_bits(x.step_delay_s, y.step_delay_s));
  QCOMPARE(x.scenario.balance, y.scenario.balance);
  QCOMPARE(x.scenario.shares_from, y.scenario.shares_from);
  QVERIFY(x.share_changes == y.share_changes);
  QVERIFY(same_bits(x.scenario.link.gbit, y.scenario.link.gbit));
  QVERIFY(same_bits(x.scenario.link.latency_us, y.scenario.link.latency_us));
  QCOMPARE(x.scenario.accumulate, y.scenario.accumulate);
  QVERIFY(same_bits(x.scenario.lr_warmup_epochs, y.scenario.lr_warmup_epochs));
  QVERIFY(x.engine == y.engine);
  QCOMPARE(x.kernels, y.kernels);
  QCOMPARE(x.simulated, y.simulated);
  QCOMPARE(x.global_batch, y.global_batch);
  QCOMPARE(x.per_replica_batch, y.per_replica_batch);
  QCOMPARE(x.per_replica_batch_mode, y.per_replica_batch_mode);
  QCOMPARE(x.epochs, y.epochs);
  QVERIFY(same_bits(x.base_learning_rate, y.base_learning_rate));
  QVERIFY(same_bits(x.learning_rate, y.learning_rate));
  QCOMPARE(x.scale_lr, y.scale_lr);
  QCOMPARE(x.seed, y.seed);
  QCOMPARE(x.dataset, y.dataset);
  QCOMPARE(x.data_dir, y.data_dir);
  QCOMPARE(x.train_size, y.train_size);
  QCOMPARE(x.val_size, y.val_size);
  QCOMPARE(x.backend, y.backend);
  QCOMPARE(x.precision, y.precision);
  QCOMPARE(x.communicator, y.communicator);
  QCOMPARE(x.version, y.version);
  QCOMPARE(x.cpu_model, y.cpu_model);
  QVERIFY(x.gpu_models == y.gpu_models);
  QCOMPARE(x.start_time, y.start_time);
  QCOMPARE(a.epochs.size(), b.epochs.size());
  for (std::size_t i = 0; i < a.epochs.size(); ++i) {
    const auto &p = a.epochs[i], &q = b.epochs[i];
    QCOMPARE(p.epoch, q.epoch);
    for (auto [u, v] : {std::pair{p.time_s, q.time_s}, {p.allreduce_s, q.allreduce_s}, {p.train_loss, q.train_loss},
                        {p.train_acc, q.train_acc}, {p.val_loss, q.val_loss}, {p.val_acc, q.val_acc},
                        {p.images_per_s, q.images_per_s}})
      QVERIFY2(same_bits(u, v), qPrintable(QString("%1 != %2").arg(u, 0, 'g', 17).arg(v, 0, 'g', 17)));
    QCOMPARE(p.replica_times.size(), q.replica_times.size());
    for (std::size_t r = 0; r < p.replica_times.size(); ++r) {
      const PhaseTimes &s = p.replica_times[r], &t = q.replica_times[r];
      for (int c = 0; c < int(time_categories().size()); ++c) QVERIFY(same_bits(s[c], t[c]));
    }
    QCOMPARE(p.param_digest, q.param_digest);
  }
  QVERIFY(same_bits(a.warmup_s, b.warmup_s));
  QCOMPARE(a.comm.replicas, b.comm.replicas);
  QCOMPARE(a.comm.bytes, b.comm.bytes);
  QCOMPARE(a.comm.buckets, b.comm.buckets);
  for (auto [u, v] : {std::pair{a.comm.allreduce_s, b.comm.allreduce_s}, {a.comm.algbw_gbs, b.comm.algbw_gbs},
                      {a.comm.busbw_gbs, b.comm.busbw_gbs}, {a.comm.step_s, b.comm.step_s},
                      {a.comm.step_no_comm_s, b.comm.step_no_comm_s}, {a.comm.exposed_s, b.comm.exposed_s}})
    QVERIFY(same_bits(u, v));
  QCOMPARE(a.engine.path, b.engine.path);
  QCOMPARE(a.engine.graph_batches, b.engine.graph_batches);
  QCOMPARE(a.engine.eager_batches, b.engine.eager_batches);
  QCOMPARE(a.engine.graph_steps, b.engine.graph_steps);
  QCOMPARE(a.engine.eager_steps, b.engine.eager_steps);
  QCOMPARE(a.engine.nodes.total(), b.engine.nodes.total());
  QCOMPARE(a.engine.nodes.kernel, b.engine.nodes.kernel);
  QCOMPARE(a.engine.conv.size(), b.engine.conv.size());
  for (std::size_t i = 0; i < a.engine.conv.size(); ++i) {
    const ConvChoice &u = a.engine.conv[i], &v = b.engine.conv[i];
    QCOMPARE(u.pass, v.pass);
    QCOMPARE(u.batch, v.batch);
    QCOMPARE(u.algo, v.algo);
    QCOMPARE(u.algo_name, v.algo_name);
    QCOMPARE(u.math, v.math);
    QCOMPARE(u.workspace_bytes, v.workspace_bytes);
    QVERIFY(same_bits(u.time_us, v.time_us));
    QCOMPARE(u.chosen_by, v.chosen_by);
  }
  QCOMPARE(a.replicas_in_sync, b.replicas_in_sync);
  QCOMPARE(a.status, b.status);
  QCOMPARE(a.error, b.error);
}

// RFC 4180: fields separated by commas, records by line breaks, quoted fields may hold
// commas, line breaks and doubled quotes.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"') {
      quoted = true;
      any = true;
    } else if (ch == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
    } else {
      field += ch;
      any = true;
    }
  }
  if (any) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

}  // namespace

class TestRunRecord : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }
  void json_round_trip();
  void file_round_trip();
  void nan_reads_back();
  void fields_added_later_are_optional();
  void schema_4_scenario_fields_still_read();
  void non_utf8_text_is_written();
  void bad_field_data();
  void bad_field();
  void garbage_file();
  void missing_file();
  void atomic_write();
  void atomic_write_failure_leaves_nothing();
  void stale_temporaries_are_removed();
  void parse_run_record_reads_text();
  void csv_rows();
  void run_id_form();
  void summaries();
  void status_words_data();
  void status_words();
  void todays_files_read_and_write_back_unchanged();
  void a_schema_4_record_keeps_its_meaning();

 private:
  fs::path dir() const { return fs::path(tmp_.path().toStdString()); }
  QTemporaryDir tmp_;
};

void TestRunRecord::json_round_trip() {
  const RunRecord r = full_record();
  const json j = to_json(r);
  QCOMPARE(j.at("format_version").get<int>(), 1);
  QVERIFY(j.at("config").at("seed").is_number_unsigned());
  QCOMPARE(j.at("config").size(), std::size_t(33));   // every RunConfig member, and the model's layer list
  QCOMPARE(j.at("config").at("engine_options").size(), std::size_t(7));   // every engine option, by key
  QCOMPARE(j.at("config").at("engine_options").at("inject_fault").get<std::string>(), std::string("abort:3:1"));
  QCOMPARE(j.at("schema_version").get<int>(), 8);
  QCOMPARE(j.at("config").at("scenario").size(), std::size_t(13));   // every scenario field, by option key
  QCOMPARE(j.at("config").at("scenario").at("powersgd").get<std::string>(), std::string("4"));
  QCOMPARE(j.at("config").at("scenario").at("bucket_mb").get<std::string>(), std::string("25"));
  QCOMPARE(j.at("config").at("scenario").at("allreduce_dtype").get<std::string>(), std::string("bf16"));
  QCOMPARE(j.at("config").at("scenario").at("accumulate").get<std::string>(), std::string("4"));
  QCOMPARE(j.at("config").at("scenario").at("lr_warmup").get<std::string>(), std::string("1.5"));
  QCOMPARE(j.at("config").at("scenario").at("slow_replica").get<std::string>(), std::string("3:2.5"));
  QCOMPARE(j.at("config").at("share_changes").at(1).at("step").get<int>(), 17);
  QCOMPARE(j.at("epochs").at(0).size(), std::size_t(10));
  QCOMPARE(j.at("comm").size(), std::size_t(9));      // every CommProfile member
  QCOMPARE(j.at("engine").size(), std::size_t(7));    // path, graph and eager batches and steps, nodes, conv
  QCOMPARE(j.at("engine").at("graph_steps").get<int64_t>(), int64_t(2344));
  QCOMPARE(j.at("engine").at("conv").at(0).size(), std::size_t(8));
  QCOMPARE(j.at("engine").at("graph_nodes").at("total").get<int>(), 24);
  QVERIFY(!to_json(RunRecord{}).contains("engine"));   // CPU runs: no engine object (records stay as they were)
  check_equal(run_record_from_json(j), r);
  // Through text too: parsing the dump must keep every double's bits.
  check_equal(run_record_from_json(json::parse(j.dump())), r);
}

void TestRunRecord::file_round_trip() {
  const RunRecord r = full_record();
  const fs::path file = dir() / "runs" / "nested" / (r.id + ".json");   // folders are created
  write_run_json(r, file);
  check_equal(read_run_json(file), r);
}

void TestRunRecord::nan_reads_back() {
  RunRecord r = full_record();
  r.epochs[1].train_loss = std::numeric_limits<double>::quiet_NaN();   // a diverged run
  const fs::path file = dir() / "nan.json";
  write_run_json(r, file);
  const RunRecord back = read_run_json(file);
  QVERIFY(std::isnan(back.epochs[1].train_loss));
}

// Schemas 2-4 kept the scenario's fields one by one; schema 5 keeps them in one object of the
// option table's texts. Both read to the same Scenario; a field or text the table refuses is a
// bad record naming it.
void TestRunRecord::schema_4_scenario_fields_still_read() {
  const RunRecord r = full_record();
  json j = to_json(r);
  j["schema_version"] = 4;
  json& c = j.at("config");
  c.erase("scenario");
  c["slow_replica"] = 3;
  c["slow_factor"] = 2.5;
  c["link_gbit"] = 10;
  c["link_latency_us"] = 25;
  c["balance"] = true;
  c["shares_from"] = r.config.scenario.shares_from;
  Scenario then = r.config.scenario;   // the fields schema 4 had; the remedies came later
  then.accumulate = 1;
  then.lr_warmup_epochs = 0;
  then.allreduce_dtype = WireDtype::Fp32;
  then.bucket_mb = 0;
  then.powersgd_rank = 0;
  QVERIFY(run_record_from_json(j).config.scenario == then);
  c.erase("link_gbit");   // schema 4 had it: a missing one is named
  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(j); }, "config.link_gbit"));

  json now = to_json(r);
  now.at("config").at("scenario")["slow_replica"] = "3:0.5";
  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(now); }, "config.scenario.slow_replica"));
  now = to_json(r);
  now.at("config").at("scenario")["warp_drive"] = "on";
  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(now); }, "warp_drive"));
  now = to_json(r);
  now.at("config").at("scenario")["balance"] = true;   // texts, not JSON booleans
  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(now); }, "config.scenario.balance"));
  // A field written later than the record's scenario keeps its default.
  now = to_json(r);
  now.at("config").at("scenario").erase("shares_from");
  QCOMPARE(QString::fromStdString(run_record_from_json(now).config.scenario.shares_from), QString());
}

void TestRunRecord::fields_added_later_are_optional() {
  // Records written before precision and the communication profile existed (and before
  // records said their schema).
  json j = to_json(full_record());
  j.erase("schema_version");
  j.at("config").erase("precision");
  j.at("config").erase("time_phases");
  for (const char* key : {"scenario", "share_changes"})
    j.at("config").erase(key);
  j.erase("comm");
  const RunRecord back = run_record_from_json(j);
  QVERIFY(!back.config.scenario.balance && back.config.share_changes.empty());   // schema 3: lock-step
  QCOMPARE(back.config.scenario.link.gbit, 0.0);                                  // and no simulated link
  QCOMPARE(back.config.precision, Precision::Fp32);
  QVERIFY(back.config.time_phases);
  QVERIFY(!back.comm.measured());
  // A GPU record of schema 4 has no step counts: read as not counted.
  json four = to_json(full_record());
  four["schema_version"] = 4;
  four.at("engine").erase("graph_steps");
  four.at("engine").erase("eager_steps");
  const RunRecord old_gpu = run_record_from_json(four);
  QCOMPARE(old_gpu.engine.graph_steps, int64_t(-1));
  QCOMPARE(old_gpu.engine.eager_steps, int64_t(-1));
  QCOMPARE(old_gpu.engine.graph_batches, (std::vector<int64_t>{128}));
  // A record of today's schema has them all: one without is refused, naming the field.
  json now = to_json(full_record());
  now.at("config").erase("time_phases");
  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(now); }, "config.time_phases"));
  json counts = to_json(full_record());
  counts.at("engine").erase("eager_steps");
  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(counts); }, "engine.eager_steps"));
  // And an unmeasured profile is not written at all.
  RunRecord r = full_record();
  r.comm = CommProfile{};
  QVERIFY(!to_json(r).contains("comm"));
}

void TestRunRecord::non_utf8_text_is_written() {
  // A Latin-1 folder name or an error quoting one must not make the record unwritable
  // (nlohmann's dump throws on invalid UTF-8 unless told to replace it).
  RunRecord r = full_record();
  r.config.data_dir = "/data/caf\xe9";
  r.error = "cannot read '/data/caf\xe9/train-images-idx3-ubyte'";
  const fs::path file = dir() / "latin1.json";
  write_run_json(r, file);
  const RunRecord back = read_run_json(file);
  QVERIFY(QString::fromStdString(back.config.data_dir).startsWith("/data/caf"));
  QCOMPARE(back.id, r.id);
}

// Each row: a JSON pointer into a valid record, the replacement (absent: remove the field),
// and the field name the message must contain.
void TestRunRecord::bad_field_data() {
  QTest::addColumn<QString>("pointer");
  QTest::addColumn<QString>("replacement");   // JSON text; empty: remove
  QTest::addColumn<QString>("field");
  QTest::newRow("missing id") << "/id" << "" << "'id'";
  QTest::newRow("engine without a path") << "/engine/path" << "" << "engine.path";
  QTest::newRow("engine step count not a number") << "/engine/graph_steps" << "\"all\"" << "engine.graph_steps";
  QTest::newRow("engine step count below -1") << "/engine/eager_steps" << "-2" << "engine.eager_steps";
  QTest::newRow("engine algorithm not a number") << "/engine/conv/0/algo" << "\"fast\"" << "engine.conv[0].algo";
  QTest::newRow("missing config") << "/config" << "" << "'config'";
  QTest::newRow("missing global_batch") << "/config/global_batch" << "" << "config.global_batch";
  QTest::newRow("missing val_acc") << "/epochs/1/val_acc" << "" << "epochs[1].val_acc";
  QTest::newRow("missing status") << "/status" << "" << "'status'";
  QTest::newRow("missing format_version") << "/format_version" << "" << "format_version";
  QTest::newRow("string batch") << "/config/global_batch" << "\"128\"" << "config.global_batch";
  QTest::newRow("float replicas") << "/config/replicas" << "2.5" << "config.replicas";
  QTest::newRow("negative seed") << "/config/seed" << "-1" << "config.seed";
  QTest::newRow("string val_acc") << "/epochs/0/val_acc" << "\"high\"" << "epochs[0].val_acc";
  QTest::newRow("bool as int") << "/replicas_in_sync" << "1" << "replicas_in_sync";
  QTest::newRow("gpu model not string") << "/config/gpu_models/0" << "3" << "config.gpu_models[0]";
  QTest::newRow("epochs not array") << "/epochs" << "{}" << "'epochs'";
  QTest::newRow("epoch not object") << "/epochs/2" << "7" << "epochs[2]";
  QTest::newRow("unknown status") << "/status" << "\"done\"" << "'status'";
  QTest::newRow("future format") << "/format_version" << "2" << "format_version";
  QTest::newRow("config not object") << "/config" << "[]" << "'config'";
  QTest::newRow("record not object") << "" << "[1, 2]" << "object";
  QTest::newRow("unknown precision") << "/config/precision" << "\"fp8\"" << "config.precision";
  QTest::newRow("unknown model") << "/config/model" << "\"cnn-dense0\"" << "config.model";
  QTest::newRow("comm not object") << "/comm" << "3" << "'comm'";
  QTest::newRow("comm without busbw") << "/comm/busbw_gbs" << "" << "comm.busbw_gbs";
  QTest::newRow("share change not first at 0") << "/config/share_changes/0/step" << "3" << "config.share_changes[0].step";
  QTest::newRow("share changes out of order") << "/config/share_changes/2/step" << "17"
                                              << "config.share_changes[2].step";
  QTest::newRow("negative share") << "/config/share_changes/1/shares/3" << "-2" << "config.share_changes[1].shares[3]";
  QTest::newRow("shares not an array") << "/config/share_changes/1/shares" << "5" << "config.share_changes[1].shares";
  QTest::newRow("share changes not an array") << "/config/share_changes" << "{}" << "config.share_changes";
}

void TestRunRecord::bad_field() {
  QFETCH(QString, pointer);
  QFETCH(QString, replacement);
  QFETCH(QString, field);
  json j = to_json(full_record());
  const json::json_pointer ptr(pointer.toStdString());
  if (replacement.isEmpty())
    j[ptr.parent_pointer()].erase(ptr.back());
  else
    j[ptr] = json::parse(replacement.toStdString());

  QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(j); }, field));
  QVERIFY(test::expect_error<DataError>([&] { parse_run_record(j.dump()); }, field));
  const fs::path file = dir() / "bad.json";
  test::write_bytes(file, j.dump(1));
  QVERIFY(test::expect_error<DataError>([&] { read_run_json(file); }, {field, test::text_of(file)}));
}

void TestRunRecord::garbage_file() {
  for (const char* text : {"", "{\"id\": ", "\x89PNG\r\n\x1a\n", "not json at all"}) {
    const fs::path file = dir() / "garbage.json";
    test::write_bytes(file, text);
    QVERIFY(test::expect_error<DataError>([&] { read_run_json(file); }, {test::text_of(file), "not valid JSON"}));
    QVERIFY(test::expect_error<DataError>([&] { parse_run_record(text); }, "not valid JSON"));
  }
  // Larger than any record can be (a sparse file, no disk used): refused before it is read.
  const fs::path huge = dir() / "huge.json";
  test::write_bytes(huge, "{");
  fs::resize_file(huge, 65u << 20);
  QVERIFY(test::expect_error<DataError>([&] { read_run_json(huge); }, {test::text_of(huge), "more than"}));
  fs::remove(huge);
}

void TestRunRecord::missing_file() {
  const fs::path file = dir() / "absent.json";
  QVERIFY(test::expect_error<DataError>([&] { read_run_json(file); }, test::text_of(file)));
}

void TestRunRecord::atomic_write() {
  const fs::path d = dir() / "atomic";
  const fs::path file = d / "target.txt";
  write_file_atomic(file, "first version, rather long so a shorter rewrite would show leftovers");
  QCOMPARE(test::read_bytes(file), std::string("first version, rather long so a shorter rewrite would show leftovers"));
  write_file_atomic(file, "second");
  QCOMPARE(test::read_bytes(file), std::string("second"));
  write_file_atomic(file, "");
  QCOMPARE(test::read_bytes(file), std::string());
  std::string big(3 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  write_file_atomic(file, big);
  QVERIFY(test::read_bytes(file) == big);
  QCOMPARE(listing(d), std::set<std::string>{"target.txt"});   // no temporaries left behind
}

void TestRunRecord::atomic_write_failure_leaves_nothing() {
  const fs::path d = dir() / "failing";
  fs::create_directories(d / "a-folder");
  // Renaming a file over a non-empty folder fails after the temporary was written.
  test::write_bytes(d / "a-folder" / "keep", "x");
  QVERIFY(test::expect_error<Error>([&] { write_file_atomic(d / "a-folder", "data"); }, test::text_of(d / "a-folder")));
  QCOMPARE(listing(d), std::set<std::string>{"a-folder"});
  // A parent that is a file cannot be created.
  test::write_bytes(d / "plain", "x");
  QVERIFY_THROWS_EXCEPTION(Error, write_file_atomic(d / "plain" / "child.json", "data"));
  QCOMPARE(listing(d), (std::set<std::string>{"a-folder", "plain"}));
}

// A writer killed between mkstemp and rename leaves "<target>.tmp.XXXXXX"; the next write of
// the same target removes those old enough to be orphans, and only those.
void TestRunRecord::stale_temporaries_are_removed() {
  const fs::path d = dir() / "stale";
  fs::create_directories(d);
  const auto age = [&](const std::string& name, std::chrono::minutes by) {
    test::write_bytes(d / name, "partial");
    fs::last_write_time(d / name, fs::file_time_type::clock::now() - by);
  };
  age("run.json.tmp.Ab12Cd", std::chrono::minutes(11));   // an orphan of this target
  age("run.json.tmp.zzzzzz", std::chrono::minutes(60));   // another one
  test::write_bytes(d / "run.json.tmp.Fresh1", "in progress");   // a live writer's, just written
  age("other.json.tmp.Ab12Cd", std::chrono::minutes(11));  // another target's orphan
  age("run.json.tmp.toolong1", std::chrono::minutes(11));  // not mkstemp's form: not ours
  age("run.json.bak", std::chrono::minutes(11));
  QVERIFY(is_atomic_temporary("run.json.tmp.Ab12Cd"));
  QVERIFY(!is_atomic_temporary("run.json.tmp.Ab12C-"));
  QVERIFY(!is_atomic_temporary(".tmp.Ab12Cd"));

  write_file_atomic(d / "run.json", "new");
  QCOMPARE(listing(d), (std::set<std::string>{"run.json", "run.json.tmp.Fresh1", "other.json.tmp.Ab12Cd",
                                              "run.json.tmp.toolong1", "run.json.bak"}));
  // The history's sweep: every target's orphans in the folder, still not the fresh one.
  QCOMPARE(remove_stale_temporaries(d), 1);
  QCOMPARE(listing(d), (std::set<std::string>{"run.json", "run.json.tmp.Fresh1", "run.json.tmp.toolong1",
                                              "run.json.bak"}));
  QCOMPARE(remove_stale_temporaries(d / "absent"), 0);   // a missing folder is not an error
}

void TestRunRecord::parse_run_record_reads_text() {
  const RunRecord r = full_record();
  check_equal(parse_run_record(to_json(r).dump()), r);
  QVERIFY(test::expect_error<DataError>([&] { parse_run_record("[]"); }, "must be a JSON object"));
}

void TestRunRecord::csv_rows() {
  RunRecord a = full_record();
  a.name = "fast, \"big\" batch";
  RunRecord b = full_record();
  b.id = "second";
  b.name = "plain";
  b.epochs.resize(2);
  b.epochs[1].val_acc = 1e-300;
  b.epochs[1].time_s = 123456.789;
  b.config.seed = 7;
  const std::vector<RunRecord> runs{a, b};
  const std::string text = runs_to_csv(runs);
  const auto rows = parse_csv(text);
  QCOMPARE(rows.size(), std::size_t(1 + 3 + 2));
  const std::vector<std::string> header{
      "run_id", "run_name", "status", "devices", "replicas", "simulated", "global_batch", "per_replica_batch",
      "per_replica_batch_mode", "learning_rate", "scale_lr", "seed", "dataset", "backend", "communicator",
      "train_size", "val_size", "epoch", "time_s", "allreduce_s", "train_loss", "train_acc", "val_loss", "val_acc",
      "images_per_s", "model", "simulated_link_gbit", "simulated_link_latency_us", "slow_replica", "slow_factor",
      "balance", "scenario", "breakdown_forward_s", "breakdown_backward_s", "breakdown_wait_s",
      "breakdown_allreduce_s", "breakdown_optimizer_s", "breakdown_compute_cpu_s", "breakdown_hidden_allreduce_s",
      "breakdown_input_wait_s"};
  QVERIFY(rows[0] == header);
  QVERIFY(text.find("\"fast, \"\"big\"\" batch\"") != std::string::npos);   // RFC 4180 quoting

  auto col = [&](const char* name) {
    return std::size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  auto number = [](const std::string& s) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') throw std::runtime_error("not a number: " + s);
    return v;
  };
  std::size_t row = 1;
  for (const RunRecord& r : runs) {
    for (const EpochMetrics& e : r.epochs) {
      const auto& f = rows[row++];
      QCOMPARE(f.size(), header.size());
      QCOMPARE(f[col("run_id")], r.id);
      QCOMPARE(f[col("run_name")], r.name);
      QCOMPARE(f[col("devices")], r.config.devices_text());
      QCOMPARE(f[col("communicator")], r.config.communicator);
      QCOMPARE(f[col("simulated")], std::string("true"));
      QCOMPARE(f[col("seed")], std::to_string(r.config.seed));
      QCOMPARE(f[col("epoch")], std::to_string(e.epoch));
      // The what-ifs, so an exported comparison says what it compared.
      QCOMPARE(f[col("model")], std::string("conv32-pool-conv64-pool-dense4096-dense10"));
      QCOMPARE(number(f[col("simulated_link_gbit")]), 10.0);
      QCOMPARE(number(f[col("simulated_link_latency_us")]), 25.0);
      QCOMPARE(f[col("slow_replica")], std::string("3"));
      QCOMPARE(number(f[col("slow_factor")]), 2.5);
      QCOMPARE(f[col("balance")], std::string("true"));
      // Every field that is on, as the option table writes it (a field added later: no new column).
      QCOMPARE(f[col("scenario")], std::string("slow_replica=3:2.5 simulated_link=10:25 balance=true "
                                               "shares_from=/runs/balanced, \"old\".json accumulate=4 lr_warmup=1.5 "
                                               "allreduce_dtype=bf16 powersgd=4 bucket_mb=25"));
      QVERIFY(same_bits(number(f[col("learning_rate")]), r.config.learning_rate));
      const std::pair<const char*, double> metrics[] = {
          {"time_s", e.time_s},       {"allreduce_s", e.allreduce_s}, {"train_loss", e.train_loss},
          {"train_acc", e.train_acc}, {"val_loss", e.val_loss},       {"val_acc", e.val_acc},
          {"images_per_s", e.images_per_s}};
      for (const auto& [name, value] : metrics)
        QVERIFY2(same_bits(number(f[col(name)]), value), qPrintable(QString("%1: %2").arg(name).arg(f[col(name)].c_str())));
      // Each time category: the replicas' mean of the epoch (the CSV's own summation).
      for (std::size_t c = 0; c < time_categories().size(); ++c) {
        double sum = 0;
        for (const PhaseTimes& t : e.replica_times) sum += t[int(c)];
        const std::string name = fmt::format("breakdown_{}_s", time_categories()[c].key);
        QVERIFY2(same_bits(number(f[col(name.c_str())]), sum / double(e.replica_times.size())), name.c_str());
      }
    }
  }
  const fs::path file = dir() / "csv" / "runs.csv";
  write_runs_csv(runs, file);
  QCOMPARE(test::read_bytes(file), text);
}

void TestRunRecord::run_id_form() {
  RunConfig c;
  c.devices = parse_devices("cpu:2");
  c.start_time = "2026-11-30T06:32:21Z";
  const std::regex cpu_form("20261130T063221Z-cpu2-[0-9a-f]{4}");
  std::set<std::string> ids;
  for (int i = 0; i < 8; ++i) {
    const std::string id = make_run_id(c);
    QVERIFY2(std::regex_match(id, cpu_form), id.c_str());
    ids.insert(id);
  }
  QVERIFY2(ids.size() > 1, "eight ids in a row were identical: the suffix is not random");

  c.devices = parse_devices("cuda:0,cuda:1");
  const std::string gpu = make_run_id(c);
  QVERIFY2(gpu.find("cuda0_1") != std::string::npos, gpu.c_str());
  // Several processes: 2 x cpu:1 is not a cpu:1 run, and the id says so.
  c.devices = parse_devices("cpu:1");
  c.processes = 2;
  const std::string np = make_run_id(c);
  QVERIFY2(np.find("-np2-cpu1-") != std::string::npos, np.c_str());
  c.processes = 1;
  // Odd inputs (no devices, no start time) still give a file-name-safe id, timestamped now.
  c.devices.clear();
  c.start_time.clear();
  const std::string odd = make_run_id(c);
  QVERIFY2(std::regex_match(odd, std::regex("[0-9]{8}T[0-9]{6}Z-[A-Za-z0-9_]+-[0-9a-f]{4}")), odd.c_str());
}

// The enum is inside; the words are the file format and must not change.
void TestRunRecord::status_words_data() {
  QTest::addColumn<QString>("word");
  QTest::addColumn<int>("status");   // -1: not a status
  QTest::newRow("completed") << "completed" << int(RunStatus::Completed);
  QTest::newRow("stopped") << "stopped" << int(RunStatus::Stopped);
  QTest::newRow("failed") << "failed" << int(RunStatus::Failed);
  QTest::newRow("capitalised") << "Completed" << -1;
  QTest::newRow("live runs are not stored") << "running" << -1;
  QTest::newRow("empty") << "" << -1;
}

void TestRunRecord::status_words() {
  QFETCH(QString, word);
  QFETCH(int, status);
  const std::optional<RunStatus> parsed = parse_run_status(word.toStdString());
  QCOMPARE(parsed.has_value(), status >= 0);
  if (!parsed) return;
  QCOMPARE(int(*parsed), status);
  QCOMPARE(QString::fromUtf8(to_string(*parsed)), word);
  RunRecord r = full_record();
  r.status = *parsed;
  QCOMPARE(QString::fromStdString(to_json(r).at("status").get<std::string>()), word);
  QCOMPARE(run_record_from_json(to_json(r)).status, *parsed);
}

// A record and its CSV written by mirrorbench-cli at commit 63f8157 (before the enums and the
// multi-process fields): the history on users' disks must keep loading; what is written back
// keeps every field it had, with the same value, and adds the later fields at their defaults
// (in the CSV: as columns after the old ones).
void TestRunRecord::todays_files_read_and_write_back_unchanged() {
  const fs::path data = MB_TEST_DATA_DIR;
  const RunRecord r = read_run_json(data / "run_record_v1.json");
  QCOMPARE(r.status, RunStatus::Completed);
  QCOMPARE(r.config.backend, Backend::OneDnn);
  QCOMPARE(int(r.epochs.size()), 2);
  QCOMPARE(r.config.processes, 1);
  QCOMPARE(r.config.replicas_per_process, r.config.replicas);
  QVERIFY(r.epochs[0].replica_times.empty() && r.epochs[0].param_digest.empty());
  const json old = json::parse(test::read_bytes(data / "run_record_v1.json"));
  const json now = to_json(r);
  // Every old field, nested ones included, is written back with the same value.
  const json diff = json::diff(old, now);
  // (The model's old name is written as its canonical text: the same model.)
  for (const auto& op : diff)
    QVERIFY2(op.at("op") == "add" || (op.at("path") == "/config/model" && op.at("value") == model_text(ModelSpec{})),
             qPrintable(QString::fromStdString(op.dump())));
  QVERIFY(now.at("config").contains("processes") && now.at("epochs").at(0).contains("replica_times"));
  // The CSV of then, line by line, with the columns added since at the end (the old ones
  // keep their places, so a spreadsheet made from the old export still reads the new one).
  const QStringList then = QString::fromStdString(test::read_bytes(data / "run_record_v1.csv")).split('\n');
  const QStringList written = QString::fromStdString(runs_to_csv(std::span<const RunRecord>(&r, 1))).split('\n');
  QCOMPARE(written.size(), then.size());
  QCOMPARE(written[0],
           then[0] + ",model,simulated_link_gbit,simulated_link_latency_us,slow_replica,slow_factor,balance,scenario,"
                     "breakdown_forward_s,breakdown_backward_s,breakdown_wait_s,breakdown_allreduce_s,"
                     "breakdown_optimizer_s,breakdown_compute_cpu_s,breakdown_hidden_allreduce_s,"
                     "breakdown_input_wait_s");
  // (That record has no breakdown: its cells are empty.)
  for (qsizetype i = 1; i < then.size(); ++i)
    QCOMPARE(written[i], then[i].isEmpty() ? QString() : then[i] + ",conv32-pool-conv64-pool-dense64-dense10,0,0,-1,1,false,,,,,,,,,");
  // And what is written now reads back the same.
  const fs::path file = dir() / "rewritten.json";
  write_run_json(r, file);
  QVERIFY(to_json(read_run_json(file)) == now);
}

// A record written by mirrorbench-cli on main before the scenario became one value (schema 4: a
// balanced run of cpu:2 with replica 1 a simulated 3x straggler, 2 epochs): it reads to the same
// run, the scenario from its old fields, and writes back every other field with the same value.
void TestRunRecord::a_schema_4_record_keeps_its_meaning() {
  const fs::path data = MB_TEST_DATA_DIR;
  const RunRecord r = read_run_json(data / "run_record_v4.json");
  Scenario expected;
  expected.straggler = {1, 3.0};
  expected.balance = true;
  QVERIFY(r.config.scenario == expected);
  QVERIFY(r.config.scenario.balanced() && changes_math(r.config.scenario) && !is_plain(r.config.scenario));
  QCOMPARE(r.config.share_changes.size(), std::size_t(2));
  QVERIFY(r.config.engine == EngineOptions{} && r.config.kernels.empty());   // not recorded then: the defaults
  const json old = json::parse(test::read_bytes(data / "run_record_v4.json"));
  const json now = to_json(r);
  const std::set<std::string> moved = {"slow_replica", "slow_factor", "link_gbit", "link_latency_us", "balance",
                                       "shares_from"};
  for (const auto& [key, value] : old.at("config").items()) {
    if (moved.count(key)) QVERIFY2(!now.at("config").contains(key), key.c_str());
    else if (key == "model") QVERIFY(model_from_text(value.get<std::string>()) == r.config.model);
    else QVERIFY2(now.at("config").at(key) == value, key.c_str());
  }
  QCOMPARE(now.at("config").at("scenario").at("slow_replica").get<std::string>(), std::string("1:3"));
  QCOMPARE(now.at("config").at("scenario").at("balance").get<std::string>(), std::string("true"));
  // The epochs: every old number the same, the per-replica times with a new category at 0.
  for (std::size_t e = 0; e < old.at("epochs").size(); ++e) {
    const json& o = old.at("epochs").at(e);
    for (const auto& [key, value] : o.items())
      if (key != "replica_times") QVERIFY2(now.at("epochs").at(e).at(key) == value, key.c_str());
    for (std::size_t k = 0; k < o.at("replica_times").size(); ++k)
      for (const auto& [key, value] : o.at("replica_times").at(k).items())
        QVERIFY2(now.at("epochs").at(e).at("replica_times").at(k).at(key) == value, key.c_str());
  }
  QCOMPARE(r.epochs.back().param_digest, std::string("de1d997f57a79f92"));
}

void TestRunRecord::summaries() {
  RunRecord r;
  QCOMPARE(r.mean_epoch_time(), 0.0);
  QCOMPARE(r.best_val_acc(), 0.0);
  for (double t : {2.0, 4.0, 9.0}) {
    EpochMetrics e;
    e.time_s = t;
    e.val_acc = t == 4.0 ? 0.9 : 0.5;
    r.epochs.push_back(e);
  }
  QCOMPARE(r.mean_epoch_time(), 5.0);
  QCOMPARE(r.best_val_acc(), 0.9);
}

QTEST_GUILESS_MAIN(TestRunRecord)
#include "test_run_record.moc"
