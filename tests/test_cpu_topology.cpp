// Where CPU replicas go: one hardware thread of every physical core first, round-robin over
// the NUMA nodes, and only then the SMT siblings; read from a fake /sys tree so the machine
// running the test does not matter.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "util/cpu_topology.h"

using namespace mb;
namespace fs = std::filesystem;

namespace {

// cpu<i>: core_id, package, and a node<n> entry, as Linux lays them out.
void fake_cpu(const fs::path& root, int cpu, int core, int node, int package = 0) {
  const fs::path dir = root / ("cpu" + std::to_string(cpu));
  fs::create_directories(dir / "topology");
  fs::create_directories(dir / ("node" + std::to_string(node)));
  std::ofstream(dir / "topology" / "core_id") << core << "\n";
  std::ofstream(dir / "topology" / "physical_package_id") << package << "\n";
}

}  // namespace

class TestCpuTopology : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void smt_siblings_come_last() {
    // 4 cores x 2 threads, Linux numbering: cpu0-3 first threads, cpu4-7 their siblings.
    const fs::path root = tmp_.filePath("smt").toStdString();
    for (int c = 0; c < 8; ++c) fake_cpu(root, c, c % 4, 0);
    const CpuPlacement p = cpu_placement({0, 1, 2, 3, 4, 5, 6, 7}, root.string());
    QCOMPARE(p.physical_cores, 4);
    QCOMPARE(p.nodes, 1);
    QVERIFY(p.order == (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  }

  void siblings_numbered_next_to_each_other() {
    // Some firmware numbers siblings adjacently: cpu0/1 are one core, cpu2/3 the next.
    const fs::path root = tmp_.filePath("adjacent").toStdString();
    for (int c = 0; c < 8; ++c) fake_cpu(root, c, c / 2, 0);
    const CpuPlacement p = cpu_placement({0, 1, 2, 3, 4, 5, 6, 7}, root.string());
    QCOMPARE(p.physical_cores, 4);
    // Two replicas go to two cores (0 and 2), not to the two threads of core 0.
    QVERIFY(p.order == (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  }

  void numa_nodes_take_turns() {
    // 2 nodes of 2 cores: cpu0,1 on node 0, cpu2,3 on node 1.
    const fs::path root = tmp_.filePath("numa").toStdString();
    for (int c = 0; c < 4; ++c) fake_cpu(root, c, c % 2, c / 2, c / 2);
    const CpuPlacement p = cpu_placement({0, 1, 2, 3}, root.string());
    QCOMPARE(p.nodes, 2);
    QCOMPARE(p.physical_cores, 4);
    QVERIFY(p.order == (std::vector<int>{0, 2, 1, 3}));
  }

  void only_the_allowed_cpus() {
    // A launcher bound this process to cpu2 and cpu3 (one core's two threads).
    const fs::path root = tmp_.filePath("bound").toStdString();
    for (int c = 0; c < 8; ++c) fake_cpu(root, c, c % 4, 0);
    const CpuPlacement p = cpu_placement({2, 6}, root.string());
    QCOMPARE(p.physical_cores, 1);
    QVERIFY(p.order == (std::vector<int>{2, 6}));
  }

  void without_topology_every_cpu_is_a_core() {
    const CpuPlacement p = cpu_placement({0, 1, 2}, tmp_.filePath("nothing").toStdString());
    QCOMPARE(p.physical_cores, 3);
    QVERIFY(p.order == (std::vector<int>{0, 1, 2}));
  }

  void this_machine() {
    const CpuPlacement p = cpu_placement();
    QVERIFY(!p.order.empty());
    QVERIFY(p.physical_cores >= 1 && p.physical_cores <= int(p.order.size()));
  }
};

QTEST_GUILESS_MAIN(TestCpuTopology)
#include "test_cpu_topology.moc"
