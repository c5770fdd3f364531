// Replays every file of the fuzz corpora (tests/fuzz/<target>/) through the same entry points
// the libFuzzer targets use, built with the normal compiler, so each change is checked against
// every input the fuzzers kept or found: an input must parse or be refused with a DataError (the
// model text: a ConfigError); any other exception fails the row, and a crash fails the whole
// test. Seeds named seed-valid* must parse.
#include <QtTest>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <string>
#include <typeinfo>

#include "fuzz/fuzz_entry.h"
#include "test_support.h"

namespace fs = std::filesystem;
namespace test = mb::test;

namespace {

const char* const kTargets[] = {"idx", "checkpoint", "run_record", "model_text", "data_source", "keras", "zip",
                                "numpy", "cifar", "image"};

// True when the input parsed, false when it was refused with a DataError (a ConfigError for
// the model text).
bool replay(const std::string& target, std::string_view bytes) {
  if (target == "idx") return mb::fuzz::idx(bytes);
  if (target == "checkpoint") return mb::fuzz::checkpoint(bytes);
  if (target == "run_record") return mb::fuzz::run_record(bytes);
  if (target == "model_text") return mb::fuzz::model_text(bytes);
  if (target == "data_source") return mb::fuzz::data_source(bytes);
  if (target == "keras") return mb::fuzz::keras(bytes);
  if (target == "zip") return mb::fuzz::zip(bytes);
  if (target == "numpy") return mb::fuzz::numpy(bytes);
  if (target == "cifar") return mb::fuzz::cifar(bytes);
  if (target == "image") return mb::fuzz::image(bytes);
  throw std::logic_error("unknown fuzz target " + target);
}

}  // namespace

class TestFuzzCorpus : public QObject {
  Q_OBJECT

 private slots:
  void every_target_has_a_corpus_data() {
    QTest::addColumn<QString>("target");
    for (const char* t : kTargets) QTest::newRow(t) << QString(t);
  }
  void every_target_has_a_corpus() {
    QFETCH(QString, target);
    const fs::path dir = fs::path(MB_FUZZ_CORPUS_DIR) / target.toStdString();
    QVERIFY2(fs::is_directory(dir), qPrintable(test::text_of(dir)));
    const auto files = std::count_if(fs::directory_iterator(dir), fs::directory_iterator(),
                                     [](const fs::directory_entry& e) { return e.is_regular_file(); });
    QVERIFY2(files >= 3, qPrintable(QString("%1 holds %2 files").arg(test::text_of(dir)).arg(files)));
  }

  void corpus_inputs_parse_or_are_refused_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("file");
    for (const char* t : kTargets) {
      const fs::path dir = fs::path(MB_FUZZ_CORPUS_DIR) / t;
      if (!fs::is_directory(dir)) continue;
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files)
        QTest::addRow("%s/%s", t, f.filename().c_str()) << QString(t) << test::text_of(f);
    }
  }
  void corpus_inputs_parse_or_are_refused() {
    QFETCH(QString, target);
    QFETCH(QString, file);
    const std::string bytes = test::read_bytes(file.toStdString());
    bool parsed = false;
    try {
      parsed = replay(target.toStdString(), bytes);
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("%1 escaped: %2").arg(test::type_name(typeid(e)), e.what())));
    } catch (...) {
      QFAIL("a non-std exception escaped");
    }
    // The hand-made valid seeds must stay valid, or the fuzzer loses its way to the deep paths.
    if (fs::path(file.toStdString()).filename().string().rfind("seed-valid", 0) == 0)
      QVERIFY2(parsed, "a valid seed was refused");
  }
};

QTEST_GUILESS_MAIN(TestFuzzCorpus)
#include "test_fuzz_corpus.moc"
