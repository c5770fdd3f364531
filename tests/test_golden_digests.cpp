// Golden parameter digests: short runs per backend and SIMD target whose final parameters were
// recorded before a change that must not change the math (tests/data/golden_digests.json).
// A refactoring of the configuration, the trainer or the engines shows here as a different
// digest. The digests depend on the kernels that ran, so each entry is keyed by
// cpu_kernels_summary() (Highway target, oneDNN ISA); a key this machine cannot reproduce is
// skipped with its reason, and the reference backend (plain loops) is the same everywhere.
// CTest caps oneDNN at AVX2 (ONEDNN_MAX_CPU_ISA), so the AVX2 entries hold on AVX-512 machines too.
//
// To record the table on a machine (e.g. an AVX-512 one, whose oneDNN kernels differ):
//   MB_GOLDEN_RECORD=tests/data/golden_digests.json build/bin/test_golden_digests
// merges this machine's entries into the file.
#include <QtTest>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "backends/onednn/onednn_engine.h"
#include "backends/onednn/simd_target.h"
#include "test_support.h"
#include "trainer/mirrored_trainer.h"

using namespace mb;
using nlohmann::json;

namespace {

struct GoldenCase {
  const char* name;
  TrainConfig config;
};

TrainConfig base_config() {
  TrainConfig c;
  c.devices = parse_devices("cpu:1");
  c.batch = 32;
  c.epochs = 2;
  c.seed = 7;
  c.lr = 2e-3;
  return c;
}

// Each case changes one thing of the base; "same as" cases must land on another case's digest.
std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  cases.push_back({"cpu1", base_config()});
  TrainConfig two = base_config();
  two.devices = parse_devices("cpu:2");
  cases.push_back({"cpu2", two});
  TrainConfig three = base_config();
  three.devices = parse_devices("cpu:3");
  three.limit_train = 100;   // 32, 32, 32, 4: uneven shares and a short last step
  cases.push_back({"cpu3_partial", three});
  TrainConfig weak = two;
  weak.batch = 16;
  weak.per_replica_batch = true;
  weak.scale_lr = true;
  cases.push_back({"cpu2_per_replica_scaled", weak});
  return cases;
}

std::filesystem::path golden_file() { return std::filesystem::path(MB_TEST_DATA_DIR) / "golden_digests.json"; }

json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return json::object();
  return json::parse(in);
}

std::string run_digest(const TrainConfig& config, const std::shared_ptr<const DataSplit>& data) {
  MirroredTrainer trainer(config, data);
  const RunRecord r = trainer.run();
  if (r.status != RunStatus::Completed || r.epochs.empty())
    throw std::runtime_error("run did not complete: " + r.error);
  return r.epochs.back().param_digest;
}

}  // namespace

class TestGoldenDigests : public QObject {
  Q_OBJECT
 private slots:
  void digests_match_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("simd");
    QTest::addRow("reference") << "reference" << "";
    for (const auto& t : onednn::simd_targets())
      QTest::addRow("onednn %s", t.name.c_str()) << "onednn" << QString::fromStdString(t.name);
  }
  void digests_match() {
    QFETCH(QString, backend);
    QFETCH(QString, simd);
    if (!simd.isEmpty()) {
      bool supported = false;
      for (const auto& t : onednn::simd_targets()) supported |= t.name == simd.toStdString() && t.supported;
      if (!supported) QSKIP(qPrintable(QString("this CPU cannot run %1").arg(simd)));
      onednn::force_simd_target(simd.toStdString());
    }
    struct Restore {
      ~Restore() { onednn::force_simd_target(""); }
    } restore;
    // The reference loops do not dispatch: one key for every machine.
    const std::string kernels = backend == "reference" ? std::string("reference") : cpu_kernels_summary();
    auto data = test::make_synthetic_split(256, 64, 11);

    const char* record_to = std::getenv("MB_GOLDEN_RECORD");
    const json golden = read_json(golden_file());
    json measured = json::object();
    for (GoldenCase& c : golden_cases()) {
      c.config.backend = parse_backend(backend.toStdString());
      measured[c.name] = run_digest(c.config, data);
    }
    // Options that must not change the math: a straggler (it only sleeps) and the breakdown.
    TrainConfig slow = golden_cases()[1].config;
    slow.backend = parse_backend(backend.toStdString());
    slow.scenario.straggler.replica = 1;
    slow.scenario.straggler.factor = 1.5;
    slow.time_phases = false;
    QCOMPARE(QString::fromStdString(run_digest(slow, data)), QString::fromStdString(measured["cpu2"]));

    if (record_to != nullptr && *record_to) {
      json all = read_json(record_to);
      all[kernels] = measured;
      std::ofstream(record_to) << all.dump(2) << "\n";
      qInfo("recorded %s in %s", kernels.c_str(), record_to);
      return;
    }
    if (!golden.contains(kernels))
      QSKIP(qPrintable(QString("no golden digests recorded for '%1' (the kernels this machine runs); record them "
                               "with MB_GOLDEN_RECORD")
                           .arg(QString::fromStdString(kernels))));
    for (const auto& [name, digest] : golden.at(kernels).items())
      QVERIFY2(measured.contains(name) && measured.at(name) == digest,
               qPrintable(QString("%1 %2: digest %3, recorded %4")
                              .arg(QString::fromStdString(kernels), QString::fromStdString(name),
                                   QString::fromStdString(measured.value(name, json("missing")).dump()),
                                   QString::fromStdString(digest.dump()))));
  }
};

QTEST_GUILESS_MAIN(TestGoldenDigests)
#include "test_golden_digests.moc"
