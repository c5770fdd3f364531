// Golden parameter digests: short runs per backend, SIMD target and conv2 kernel whose final
// parameters were recorded before a change that must not change the math
// (tests/data/golden_digests.json). A refactoring of the configuration, the trainer or the
// engines shows here as a different digest. The digests depend on the kernels that ran, so each
// entry is keyed by the record's `kernels` (Highway target, oneDNN ISA, conv2's kernels: what
// --simd-target, --onednn-isa or ONEDNN_MAX_CPU_ISA, and --cpu-conv2 chose); a key this machine
// cannot reproduce is skipped with its reason, and the reference backend (plain loops) is the
// same everywhere. CTest caps oneDNN at AVX2 (ONEDNN_MAX_CPU_ISA), so the AVX2 entries hold on
// AVX-512 machines too. Every Highway target gives the same digests: --simd-target changes
// the speed only.
//
// To record the table on a machine (e.g. an AVX-512 one, whose oneDNN kernels differ):
//   MIRRORBENCH_GOLDEN_RECORD=tests/data/golden_digests.json build/bin/test_golden_digests
// merges this machine's entries into the file.
#include <QtTest>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "backends/onednn/onednn_engine.h"
#include "backends/onednn/simd_target.h"
#include "test_support.h"
#include "config/train_options.h"
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

RunRecord run(const TrainConfig& config, const std::shared_ptr<const DataSplit>& data) {
  MirroredTrainer trainer(config, data);
  RunRecord r = trainer.run();
  if (r.status != RunStatus::Completed || r.epochs.empty())
    throw std::runtime_error("run did not complete: " + r.error);
  return r;
}

std::string run_digest(const TrainConfig& config, const std::shared_ptr<const DataSplit>& data) {
  return run(config, data).epochs.back().param_digest;
}

}  // namespace

class TestGoldenDigests : public QObject {
  Q_OBJECT
 private slots:
  void digests_match_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("simd");    // --simd-target ("": the best)
    QTest::addColumn<QString>("conv2");   // --cpu-conv2
    QTest::addRow("reference") << "reference" << "" << "own";
    for (const auto& t : onednn::simd_targets())
      QTest::addRow("onednn %s", t.name.c_str()) << "onednn" << QString::fromStdString(t.name) << "own";
    // conv2 on oneDNN, on the scalar target (every machine has it: the key never skips there):
    // recorded with MB_CONV2=onednn before --cpu-conv2 replaced that variable.
    QTest::addRow("onednn scalar, conv2 on oneDNN") << "onednn" << "scalar" << "onednn";
  }
  void digests_match() {
    QFETCH(QString, backend);
    QFETCH(QString, simd);
    QFETCH(QString, conv2);
    if (!simd.isEmpty()) {
      bool supported = false;
      for (const auto& t : onednn::simd_targets()) supported |= t.name == simd.toStdString() && t.supported;
      if (!supported) QSKIP(qPrintable(QString("this CPU cannot run %1").arg(simd)));
    }
    // The options, as a command line gives them.
    auto configure = [&](TrainConfig& c) {
      c.backend = parse_backend(backend.toStdString());
      set_option(train_option("simd_target"), c, simd.isEmpty() ? "auto" : simd.toStdString());
      set_option(train_option("cpu_conv2"), c, conv2.toStdString());
    };
    auto data = test::make_synthetic_split(256, 64, 11);

    const char* record_to = std::getenv("MIRRORBENCH_GOLDEN_RECORD");
    const json golden = read_json(golden_file());
    json measured = json::object();
    std::string kernels;   // as the records name them
    for (GoldenCase& c : golden_cases()) {
      configure(c.config);
      const RunRecord r = run(c.config, data);
      measured[c.name] = r.epochs.back().param_digest;
      kernels = r.config.kernels;
    }
    // The reference loops do not dispatch: one key for every machine.
    if (backend == "reference") {
      QCOMPARE(QString::fromStdString(kernels), QString("reference loops"));
      kernels = "reference";
    } else {
      const Conv2Kernel k = conv2 == "own" ? Conv2Kernel::Own : Conv2Kernel::Onednn;
      QCOMPARE(QString::fromStdString(kernels), QString::fromStdString(cpu_kernels_summary(k)));
    }
    // Options that must not change the math: a straggler (it only sleeps) and the breakdown.
    TrainConfig slow = golden_cases()[1].config;
    configure(slow);
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
                               "with MIRRORBENCH_GOLDEN_RECORD")
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
