// The option table (config/train_options.h) against everything it drives, walked row by row:
// a new option gets these checks by being added to the table. Every option reads back its own
// text and its example; reaches the record through the fields it lists, and comes back from
// the record; survives the workbench's settings and the child command line (read back by the
// CLI's own parser); and every option marked "all processes agree" is in config_digest().
#include <QTemporaryDir>
#include <QtTest>

#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/settings.h"
#include "model/model_text.h"
#include "command_line.h"
#include "backends/registry.h"
#include "config/train_options.h"
#include "options/train_flags.h"
#include "records/run_record.h"
#include "run/child_command.h"
#include "test_support.h"
#include "trainer/run_check.h"

using namespace mb;
using nlohmann::json;

namespace {

// Two replicas, so the per-replica and scaled modes show in the record.
TrainConfig base() {
  TrainConfig c;
  c.devices = cpu_replicas(2);
  c.data_dir = "/data/fashion";
  return c;
}

// base() with the example of the option `o` needs to take effect, if any: what `o`'s own
// effect shows against.
TrainConfig base_for(const TrainOption& o) {
  TrainConfig c = base();
  if (!o.example_with.empty()) set_option(train_option(o.example_with), c, train_option(o.example_with).example);
  return c;
}

TrainConfig with_example(const TrainOption& o) {
  TrainConfig c = base_for(o);
  set_option(o, c, o.example);
  return c;
}

// The facts a trainer would add, from the request itself (no data, no machine).
RunShape shape_of(const TrainConfig& c) {
  RunShape s;
  s.replicas = total_replicas(c, 1);
  s.backend = resolve_backend(device_kind(c.devices), c.backend);
  s.dataset = "fashion-mnist";
  s.data_dir = c.data_dir;
  s.train_available = 60000;
  s.val_available = 10000;
  return s;
}

json record_config(const TrainConfig& c) {
  RunRecord r;
  r.id = "x";
  r.config = resolve_options(c, shape_of(c));
  return to_json(r).at("config");
}

std::set<std::string> split(std::string_view keys) {
  std::set<std::string> out;
  while (!keys.empty()) {
    const auto comma = keys.find(',');
    out.emplace(keys.substr(0, comma));
    keys = comma == std::string_view::npos ? std::string_view() : keys.substr(comma + 1);
  }
  return out;
}

QString name(const TrainOption& o) { return QString::fromUtf8(o.key.data(), qsizetype(o.key.size())); }

}  // namespace

class TestTrainOptions : public QObject {
  Q_OBJECT
 private slots:
  void options_data() {
    QTest::addColumn<QString>("key");
    for (const TrainOption& o : train_options()) QTest::newRow(o.key.data()) << name(o);
  }

  // Its own text and its example read back; the example is not the default.
  void text_reads_back_data() { options_data(); }
  void text_reads_back() {
    QFETCH(QString, key);
    const TrainOption& o = train_option(key.toStdString());
    QVERIFY2(!o.example.empty() && !o.help.empty(), "every option has an example and a help text");
    const TrainConfig c = with_example(o);
    QVERIFY(!is_default(o, c));
    TrainConfig back = base_for(o);
    set_option(o, back, option_text(o, c));
    QVERIFY(back == c);
    const auto problems = check_run(c);
    // (--bucket-mb alone: advice that it overlaps only a simulated link's wire.)
    QVERIFY2(problems.empty() || o.key == "precision" || o.key == "slow_replica" || o.key == "bucket_mb" ||
                 (o.is_engine() && std::none_of(problems.begin(), problems.end(), [](const RunProblem& p) { return p.is_error(); })),
             "the example makes a runnable request (or one only the machine refuses, or advice on a GPU-only option)");
  }

  // The option reaches the record, and only in the fields it lists (the replica count too).
  void reaches_the_record_data() { options_data(); }
  void reaches_the_record() {
    QFETCH(QString, key);
    const TrainOption& o = train_option(key.toStdString());
    if (!o.resolve) {
      QVERIFY2(o.record_keys.empty(), "an option without a resolve lists no record field");
      QSKIP("not recorded (an output, or a per-process setting)");
    }
    const json before = record_config(base_for(o)), after = record_config(with_example(o));
    std::set<std::string> allowed = split(o.record_keys);
    allowed.insert("replicas");
    bool changed = false;
    for (const auto& [field, value] : after.items()) {
      if (before.at(field) == value) continue;
      changed = true;
      QVERIFY2(allowed.count(field), qPrintable(QString("%1 changed the record's %2, which it does not list")
                                                    .arg(key, QString::fromStdString(field))));
    }
    QVERIFY2(changed, "the option does not reach the record");
    for (const std::string& field : split(o.record_keys)) QVERIFY2(after.contains(field), field.c_str());
  }

  // Resolving the request recovered from a record gives the same record: a run can be repeated.
  void comes_back_from_the_record_data() { options_data(); }
  void comes_back_from_the_record() {
    QFETCH(QString, key);
    const TrainOption& o = train_option(key.toStdString());
    if (!o.resolve) QSKIP("not recorded");
    const TrainConfig c = with_example(o);
    const RunConfig recorded = run_config_from_json(record_config(c));
    const TrainConfig again = request_from_record(recorded);
    QCOMPARE(QString::fromStdString(record_config(again).dump()), QString::fromStdString(record_config(c).dump()));
  }

  // The workbench remembers it between launches, under its old key.
  void survives_the_settings_data() { options_data(); }
  void survives_the_settings() {
    QFETCH(QString, key);
    const TrainOption& o = train_option(key.toStdString());
    if (!o.remembered) QSKIP("not remembered by the workbench");
    QTemporaryDir home;
    qputenv("MIRRORBENCH_HOME", home.path().toUtf8());
    const TrainConfig c = with_example(o);
    {
      Settings s;
      s.set_last_config(c);
      s.sync();
    }
    Settings s;
    QVERIFY(s.has_last_config());
    QCOMPARE(QString::fromStdString(option_text(o, s.last_config())), QString::fromStdString(option_text(o, c)));
    qunsetenv("MIRRORBENCH_HOME");
  }

  // The child command line of a multi-process run, read back by mirrorbench-cli's parser.
  void survives_the_child_command_line_data() { options_data(); }
  void survives_the_child_command_line() {
    QFETCH(QString, key);
    const TrainOption& o = train_option(key.toStdString());
    if (o.flag.empty()) QSKIP("no flag of its own (the child gets --trace FILE)");
    const TrainConfig c = with_example(o);
    std::vector<std::string> args;
    for (const QString& a : cli_train_args(c).mid(1)) args.push_back(a.toStdString());   // without "train"
    CLI::App app;
    TrainConfig parsed;
    options::add_train_flags(app, parsed);
    std::string progress;
    app.add_option("--progress", progress);
    std::reverse(args.begin(), args.end());   // CLI11 takes them last first
    app.parse(args);
    QCOMPARE(QString::fromStdString(option_text(o, parsed)), QString::fromStdString(option_text(o, c)));
    TrainConfig expected = c;
    expected.trace = false;
    QVERIFY2(parsed == expected, "every other option arrives as it was too");
  }

  // The processes of a run compare the digest of these: every option that changes the math or
  // the collectives is in it, and the others (folders, the timeout) are not.
  void agreed_options_are_in_the_digest_data() { options_data(); }
  void agreed_options_are_in_the_digest() {
    QFETCH(QString, key);
    const TrainOption& o = train_option(key.toStdString());
    const bool differs = config_digest(with_example(o)) != config_digest(base_for(o));
    QCOMPARE(differs, o.agree);
  }

  // The scenario and the engines' options as whole values, every field set: the child command
  // line of a run under mpirun, mirrorbench-cli's parser, the workbench's own command line and
  // the record each give them back whole; the workbench's settings keep none of them (a class
  // must not inherit yesterday's demonstration).
  void the_scenario_round_trips_whole() {
    TrainConfig c = base();
    c.scenario.straggler = {1, 2.5};
    c.scenario.link = {10, 25};
    c.scenario.balance = true;
    c.scenario.shares_from = "/tmp/mirrorbench-balanced.json";
    c.scenario.accumulate = 4;
    c.scenario.lr_warmup_epochs = 1.5;
    c.scenario.allreduce_dtype = WireDtype::Fp16;
    c.scenario.bucket_mb = 25;
    c.scenario.powersgd_rank = 2;
    c.scenario.input = {0.5, 0.2, 3, 4};
    c.engine = {Conv2Kernel::OnednnDirect, "avx2", CudaPath::Fused, 0.5, {FaultKind::Stall, 7, 1}, "sse4", false};
    for (const TrainOption& o : train_options())
      if (o.is_scenario() || o.is_engine()) {
        QVERIFY2(!is_default(o, c), o.key.data());   // every field of both is on
        QVERIFY2(!o.remembered, o.key.data());
      }
    auto same = [&](const TrainConfig& got) { return got.scenario == c.scenario && got.engine == c.engine; };

    // mirrorbench-cli's parser, from the flags the table writes.
    std::vector<std::string> args = option_arguments(c);
    {
      CLI::App app;
      TrainConfig parsed;
      options::add_train_flags(app, parsed);
      std::vector<std::string> reversed(args.rbegin(), args.rend());   // CLI11 takes them last first
      app.parse(reversed);
      QVERIFY(same(parsed));
    }
    // The child of a run under mpirun.
    {
      std::vector<std::string> child;
      for (const QString& a : cli_train_args(c).mid(1)) child.push_back(a.toStdString());
      CLI::App app;
      TrainConfig parsed;
      options::add_train_flags(app, parsed);
      std::string progress;
      app.add_option("--progress", progress);
      std::reverse(child.begin(), child.end());
      app.parse(child);
      QVERIFY(same(parsed));
    }
    // The workbench's own command line (its scripted mode).
    {
      std::vector<std::string> gui{"mirrorbench", "--run"};
      gui.insert(gui.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& a : gui) argv.push_back(a.data());
      const GuiCommandLine parsed = parse_gui_command_line(int(argv.size()), argv.data());
      QVERIFY(same(parsed.script.given));
    }
    // The record, and the request that repeats it.
    const RunConfig recorded = run_config_from_json(record_config(c));
    QVERIFY(recorded.scenario == c.scenario && recorded.engine == c.engine);
    QVERIFY(same(request_from_record(recorded)));
    // The settings.
    QTemporaryDir home;
    qputenv("MIRRORBENCH_HOME", home.path().toUtf8());
    {
      Settings s;
      s.set_last_config(c);
      s.sync();
    }
    const TrainConfig remembered = Settings().last_config();
    QVERIFY(remembered.scenario == Scenario{} && remembered.engine == EngineOptions{});
    QCOMPARE(format_devices(remembered.devices), format_devices(c.devices));   // what is remembered still is
    qunsetenv("MIRRORBENCH_HOME");
  }

  // Help texts come from the table too: value name and range, and the default.
  void help_texts() {
    CLI::App app;
    TrainConfig c;
    options::add_train_flags(app, c);
    const std::string help = app.help();
    for (const TrainOption& o : train_options()) {
      if (o.flag.empty()) continue;
      QVERIFY2(help.find(std::string(o.flag)) != std::string::npos, o.flag.data());
      const std::string value = option_value_help(o);
      if (!value.empty()) QVERIFY2(help.find(value) != std::string::npos, value.c_str());
    }
    QCOMPARE(QString::fromStdString(option_value_help(train_option("epochs"))), QString("E:1..100000"));
    QCOMPARE(QString::fromStdString(option_value_help(train_option("lr"))), QString("X:(0, 1e6]"));
    QCOMPARE(QString::fromStdString(option_value_help(train_option("pace"))), QString("S:[0, 60]"));
  }

  // --model and --simulated-link: their texts, their record words, and what they refuse.
  void model_and_link_syntax() {
    TrainConfig c;
    QCOMPARE(QString::fromStdString(option_text(train_option("model"), c)),
             QString("conv32-pool-conv64-pool-dense64-dense10"));   // the canonical text: what config_digest hashes
    QCOMPARE(QString::fromStdString(option_text(train_option("simulated_link"), c)), QString("off"));
    set_option(train_option("model"), c, "dense:4096");
    QVERIFY(c.model == reference_family(4096));
    QVERIFY(resolve_options(c, shape_of(c)).model == reference_family(4096));
    QCOMPARE(QString::fromStdString(model_text(resolve_options(TrainConfig{}, shape_of(TrainConfig{})).model)),
             QString("conv32-pool-conv64-pool-dense64-dense10"));   // the record's text is the canonical one
    set_option(train_option("simulated_link"), c, "10");
    QCOMPARE(c.scenario.link.gbit, 10.0);
    QCOMPARE(c.scenario.link.latency_us, 0.0);
    set_option(train_option("simulated_link"), c, "1:50");
    QCOMPARE(c.scenario.link.gbit, 1.0);
    QCOMPARE(c.scenario.link.latency_us, 50.0);
    QCOMPARE(QString::fromStdString(option_text(train_option("simulated_link"), c)), QString("1:50"));
    QVERIFY(config_digest(c) != config_digest(TrainConfig{}));
    set_option(train_option("simulated_link"), c, "off");
    QCOMPARE(c.scenario.link.gbit, 0.0);
    for (const char* bad : {"0", "-1", "fast", "1:", "1:-5", "1e6"})
      QVERIFY2(test::expect_error<ConfigError>([&] { set_option(train_option("simulated_link"), c, bad); },
                                               "--simulated-link"),
               bad);
    for (const char* bad : {"dense:0", "wide", "dense:99999"})
      QVERIFY2(test::expect_error<ConfigError>([&] { set_option(train_option("model"), c, bad); }, "--model"), bad);
  }

  // The rules: a simulated link on GPU replicas is refused; on one replica it is advice.
  void link_rules() {
    TrainConfig c = base();
    c.scenario.link.gbit = 1;
    for (const RunProblem& p : check_run(c, RunSite{})) QVERIFY2(!p.is_error(), p.message.c_str());
    c.devices = cpu_replicas(1);
    const auto one = check_run(c, RunSite{});
    QVERIFY(std::any_of(one.begin(), one.end(), [](const RunProblem& p) {
      return !p.is_error() && p.option == "simulated_link";
    }));
    c.devices = parse_devices("cuda:0,cuda:1");
    const auto gpu = check_run(c, RunSite{});
    QVERIFY(std::any_of(gpu.begin(), gpu.end(), [](const RunProblem& p) {
      return p.is_error() && p.option == "simulated_link" && p.message.find("CPU replicas only") != std::string::npos;
    }));
    // A model the backend cannot train (the CUDA backend: the reference family only) is refused
    // naming the model and why; the CPU backends train it.
    c = base();
    c.model = model_from_text("lenet5");
    for (const RunProblem& p : check_run(c, RunSite{})) QVERIFY2(p.option != "model", p.message.c_str());
    c.devices = parse_devices("cuda:0");
    const auto bad = check_run(c, RunSite{});
    QVERIFY(std::any_of(bad.begin(), bad.end(), [](const RunProblem& p) {
      return p.is_error() && p.option == "model" && p.message.find("lenet5") != std::string::npos &&
             p.message.find("reference family") != std::string::npos;
    }));
  }
};

QTEST_GUILESS_MAIN(TestTrainOptions)
#include "test_train_options.moc"
