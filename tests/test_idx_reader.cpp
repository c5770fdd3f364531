// Tests of the IDX reader: raw and .gz round trips, folder loading, and a table of corrupt
// files that must each raise a DataError naming the file and the problem. Files are
// written by the test itself; no binary fixtures.
#include <QtTest>

#include <sys/resource.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "data/dataset.h"
#include "test_support.h"
#include "util/error.h"

using namespace mb;
namespace fs = std::filesystem;

namespace {

void put_be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xFF);
}

std::string idx_images(uint32_t count, uint32_t rows, uint32_t cols, const std::string& pixels,
                       uint32_t magic = 0x00000803) {
  std::string out;
  put_be32(out, magic);
  put_be32(out, count);
  put_be32(out, rows);
  put_be32(out, cols);
  return out + pixels;
}

std::string idx_labels(uint32_t count, const std::string& labels, uint32_t magic = 0x00000801) {
  std::string out;
  put_be32(out, magic);
  put_be32(out, count);
  return out + labels;
}

std::string gzip(const std::string& bytes, const fs::path& scratch) {
  gzFile f = gzopen(scratch.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("test: gzopen failed");
  gzwrite(f, bytes.data(), unsigned(bytes.size()));
  gzclose(f);
  auto out = test::read_bytes(scratch);
  fs::remove(scratch);
  return out;
}

// n images of 28x28 with distinct content, labels cycling 0..9.
std::string pixels_for(int n) {
  std::string px(std::size_t(n) * 784, '\0');
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<char>((i * 7 + i / 784) & 0xFF);
  return px;
}
std::string labels_for(int n) {
  std::string l;
  for (int i = 0; i < n; ++i) l += static_cast<char>(i % 10);
  return l;
}

// Caps the address space for a scope, so that an allocation sized from a corrupt header
// fails the test (bad_alloc is not a DataError) instead of passing quietly.
class AddressSpaceCap {
 public:
  explicit AddressSpaceCap(rlim_t headroom) {
    if (getrlimit(RLIMIT_AS, &old_) != 0) return;
    std::ifstream statm("/proc/self/statm");
    long pages = 0;
    if (!(statm >> pages)) return;
    rlimit cap = old_;
    cap.rlim_cur = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + headroom;
    if (old_.rlim_max != RLIM_INFINITY && cap.rlim_cur > old_.rlim_max) return;
    active_ = setrlimit(RLIMIT_AS, &cap) == 0;
  }
  ~AddressSpaceCap() {
    if (active_) setrlimit(RLIMIT_AS, &old_);
  }
  AddressSpaceCap(const AddressSpaceCap&) = delete;
  AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;

 private:
  rlimit old_{};
  bool active_ = false;
};

}  // namespace

class TestIdxReader : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void roundTrip_data();
  void roundTrip();
  void corrupt_data();
  void corrupt();
  void loadDirPrefersRaw();
  void loadDirMissing();
  void defaultDataDir();
  void fashionMnist();

 private:
  fs::path dir() const { return fs::path(tmp_.path().toStdString()); }
  QTemporaryDir tmp_;
  int case_ = 0;
};

void TestIdxReader::initTestCase() { QVERIFY(tmp_.isValid()); }

void TestIdxReader::roundTrip_data() {
  QTest::addColumn<bool>("gzImages");
  QTest::addColumn<bool>("gzLabels");
  QTest::addColumn<int>("count");
  QTest::newRow("raw") << false << false << 5;
  QTest::newRow("gz") << true << true << 5;
  QTest::newRow("mixed") << true << false << 3;
  QTest::newRow("gz, larger than one read chunk") << true << true << 6000;   // 4.7 MB > 4 MiB
}

void TestIdxReader::roundTrip() {
  QFETCH(bool, gzImages);
  QFETCH(bool, gzLabels);
  QFETCH(int, count);
  const auto px = pixels_for(count), lb = labels_for(count);
  const fs::path images = dir() / (gzImages ? "rt-images.gz" : "rt-images");
  const fs::path labels = dir() / (gzLabels ? "rt-labels.gz" : "rt-labels");
  auto img = idx_images(uint32_t(count), 28, 28, px);
  auto lab = idx_labels(uint32_t(count), lb);
  test::write_bytes(images, gzImages ? gzip(img, dir() / "scratch.gz") : img);
  test::write_bytes(labels, gzLabels ? gzip(lab, dir() / "scratch.gz") : lab);

  Dataset d = load_idx_pair(images, labels, "unit/train");
  QCOMPARE(d.name, std::string("unit/train"));
  QCOMPARE(d.count, int64_t(count));
  QCOMPARE(d.rows, 28);
  QCOMPARE(d.cols, 28);
  QCOMPARE(d.pixels_per_image(), int64_t(784));
  QVERIFY(std::string(d.pixels.begin(), d.pixels.end()) == px);
  QVERIFY(std::string(d.labels.begin(), d.labels.end()) == lb);
  QCOMPARE(int(d.image(count - 1)[5]), int(uint8_t(px[std::size_t(count - 1) * 784 + 5])));
}

// Each row: the bytes of the images and labels files (a null QByteArray: do not create it),
// which file the message must name, and a keyword it must contain.
void TestIdxReader::corrupt_data() {
  QTest::addColumn<QByteArray>("images");
  QTest::addColumn<QByteArray>("labels");
  QTest::addColumn<bool>("gzImages");
  QTest::addColumn<QString>("culprit");   // "images" or "labels"
  QTest::addColumn<QString>("keyword");

  auto q = [](const std::string& s) { return QByteArray(s.data(), qsizetype(s.size())); };
  const std::string px3 = pixels_for(3), lb3 = labels_for(3);
  const QByteArray good_img = q(idx_images(3, 28, 28, px3)), good_lab = q(idx_labels(3, lb3));
  const fs::path scratch = dir() / "scratch.gz";

  QTest::newRow("missing images") << QByteArray() << good_lab << false << "images" << "missing";
  QTest::newRow("missing labels") << good_img << QByteArray() << false << "labels" << "missing";
  QTest::newRow("bad magic") << q(idx_images(3, 28, 28, px3, 0x12345678)) << good_lab << false << "images"
                             << "bad magic";
  QTest::newRow("labels file as images") << q(idx_labels(3, lb3)) << good_lab << false << "images" << "bad magic";
  QTest::newRow("images file as labels") << good_img << good_img << false << "labels" << "bad magic";
  QTest::newRow("float dtype") << q(idx_images(3, 28, 28, px3, 0x00000D03)) << good_lab << false << "images"
                               << "dtype";
  QTest::newRow("truncated images") << good_img.left(good_img.size() - 10) << good_lab << false << "images"
                                    << "truncated";
  QTest::newRow("truncated labels") << good_img << good_lab.left(good_lab.size() - 1) << false << "labels"
                                    << "truncated";
  QTest::newRow("truncated header") << good_img.left(6) << good_lab << false << "images" << "truncated";
  QTest::newRow("empty images file") << QByteArray("") << good_lab << false << "images" << "truncated";
  QTest::newRow("trailing data") << good_img + QByteArray(5, 'x') << good_lab << false << "images" << "trailing";
  QTest::newRow("count mismatch") << good_img << q(idx_labels(2, labels_for(2))) << false << "images"
                                  << "mismatch";
  QTest::newRow("label 10") << good_img << q(idx_labels(3, std::string("\x01\x02\x0A", 3))) << false << "labels"
                            << "index 2";
  QTest::newRow("label 255") << good_img << q(idx_labels(3, std::string("\xFF\x02\x03", 3))) << false << "labels"
                             << "index 0";
  QTest::newRow("absurd count") << q(idx_images(0x7fffffff, 28, 28, px3)) << good_lab << false << "images"
                                << "absurd";
  QTest::newRow("absurd label count") << good_img << q(idx_labels(0xffffffff, lb3)) << false << "labels"
                                      << "absurd";
  QTest::newRow("zero count") << q(idx_images(0, 28, 28, "")) << q(idx_labels(0, "")) << false << "images"
                              << "absurd";
  // 10M x 784 = 7.8 GB declared, within the count cap: must fail on size, not allocate.
  const QByteArray huge_lab = q(idx_labels(10'000'000, lb3));
  QTest::newRow("huge declared, tiny file") << q(idx_images(10'000'000, 28, 28, px3)) << huge_lab << false
                                            << "images" << "truncated";
  QTest::newRow("huge declared, tiny gz") << q(gzip(idx_images(10'000'000, 28, 28, px3), scratch)) << huge_lab
                                          << true << "images" << "truncated";
  QTest::newRow("wrong rows") << q(idx_images(3, 27, 28, pixels_for(3).substr(0, 3 * 27 * 28))) << good_lab
                              << false << "images" << "28x28";
  QTest::newRow("wrong cols") << q(idx_images(3, 28, 32, pixels_for(4).substr(0, 3 * 28 * 32))) << good_lab
                              << false << "images" << "28x28";
  const std::string gz = gzip(idx_images(3, 28, 28, px3), scratch);
  QTest::newRow("truncated gz") << q(gz.substr(0, gz.size() / 2)) << good_lab << true << "images" << "truncated";
  QTest::newRow("gz without its trailer") << q(gz.substr(0, gz.size() - 6)) << good_lab << true << "images"
                                          << "truncated";
  std::string bad_gz = gz;   // the gzip trailer is CRC-32 then size: break the CRC
  bad_gz[bad_gz.size() - 8] = static_cast<char>(bad_gz[bad_gz.size() - 8] ^ 0x5A);
  QTest::newRow("gz with a bad CRC") << q(bad_gz) << good_lab << true << "images" << "corrupt";
}

void TestIdxReader::corrupt() {
  QFETCH(QByteArray, images);
  QFETCH(QByteArray, labels);
  QFETCH(bool, gzImages);
  QFETCH(QString, culprit);
  QFETCH(QString, keyword);
  // Unique names per row, so a message naming a stale file cannot pass by accident.
  const std::string tag = std::to_string(++case_);
  const fs::path img = dir() / ("c" + tag + "-images-idx3-ubyte" + (gzImages ? ".gz" : ""));
  const fs::path lab = dir() / ("c" + tag + "-labels-idx1-ubyte");
  if (!images.isNull()) test::write_bytes(img, std::string_view(images.constData(), std::size_t(images.size())));
  if (!labels.isNull()) test::write_bytes(lab, std::string_view(labels.constData(), std::size_t(labels.size())));

  std::optional<std::string> message;
  {
    AddressSpaceCap cap(rlim_t(2) << 30);   // the real data set needs ~55 MB; 2 GB is plenty
    try {
      load_idx_pair(img, lab, "corrupt");
    } catch (const DataError& e) {
      message = e.what();
    }
  }
  QVERIFY2(message.has_value(), "no DataError thrown");
  qInfo().noquote() << QString::fromStdString(*message);
  const QString msg = QString::fromStdString(*message);
  const QString file = QString::fromStdString((culprit == "images" ? img : lab).string());
  QVERIFY2(msg.contains(file), qPrintable("message does not name " + file + ": " + msg));
  QVERIFY2(msg.contains(keyword, Qt::CaseInsensitive), qPrintable("message lacks '" + keyword + "': " + msg));
}

void TestIdxReader::loadDirPrefersRaw() {
  const fs::path d = dir() / "tiny-mnist";
  fs::create_directories(d);
  const fs::path scratch = dir() / "scratch.gz";
  // Train: raw beside a broken .gz (the raw one must be read). Test: .gz only.
  test::write_bytes(d / "train-images-idx3-ubyte", idx_images(4, 28, 28, pixels_for(4)));
  test::write_bytes(d / "train-images-idx3-ubyte.gz", "not gzip at all");
  test::write_bytes(d / "train-labels-idx1-ubyte", idx_labels(4, labels_for(4)));
  test::write_bytes(d / "t10k-images-idx3-ubyte.gz", gzip(idx_images(2, 28, 28, pixels_for(2)), scratch));
  test::write_bytes(d / "t10k-labels-idx1-ubyte.gz", gzip(idx_labels(2, labels_for(2)), scratch));

  for (const fs::path& spelling : {d, d / ""}) {
    DataSplit s = load_idx_dir(spelling);
    QCOMPARE(s.name, std::string("tiny-mnist"));
    QCOMPARE(s.train.name, std::string("tiny-mnist/train"));
    QCOMPARE(s.train.count, int64_t(4));
    QCOMPARE(s.val.count, int64_t(2));
    QVERIFY(std::string(s.val.labels.begin(), s.val.labels.end()) == labels_for(2));
  }
}

void TestIdxReader::loadDirMissing() {
  const fs::path absent = dir() / "no-such-folder";
  try {
    load_idx_dir(absent);
    QFAIL("no DataError for a missing folder");
  } catch (const DataError& e) {
    QVERIFY(QString(e.what()).contains(QString::fromStdString(absent.string())));
  }
  // A folder lacking the test pair names the missing file.
  const fs::path d = dir() / "half-mnist";
  fs::create_directories(d);
  test::write_bytes(d / "train-images-idx3-ubyte", idx_images(1, 28, 28, pixels_for(1)));
  test::write_bytes(d / "train-labels-idx1-ubyte", idx_labels(1, labels_for(1)));
  try {
    load_idx_dir(d);
    QFAIL("no DataError for missing t10k files");
  } catch (const DataError& e) {
    QVERIFY2(QString(e.what()).contains("t10k-images-idx3-ubyte"), e.what());
    QVERIFY2(QString(e.what()).contains("missing"), e.what());
  }
}

void TestIdxReader::defaultDataDir() {
  const QByteArray saved = qgetenv("MIRRORBENCH_DATA");
  const bool had = qEnvironmentVariableIsSet("MIRRORBENCH_DATA");
  qunsetenv("MIRRORBENCH_DATA");
  QCOMPARE(default_data_dir(), fs::path("/usr/share/datasets/fashion-mnist"));
  qputenv("MIRRORBENCH_DATA", "/somewhere/else");
  QCOMPARE(default_data_dir(), fs::path("/somewhere/else"));
  if (had)
    qputenv("MIRRORBENCH_DATA", saved);
  else
    qunsetenv("MIRRORBENCH_DATA");
}

void TestIdxReader::fashionMnist() {
  const fs::path d = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(d)) QSKIP("Fashion-MNIST is not installed at /usr/share/datasets/fashion-mnist");
  DataSplit s = load_idx_dir(d);
  QCOMPARE(s.name, std::string("fashion-mnist"));
  QCOMPARE(s.train.count, int64_t(60000));
  QCOMPARE(s.val.count, int64_t(10000));
  for (const Dataset* set : {&s.train, &s.val}) {
    QCOMPARE(set->rows, 28);
    QCOMPARE(set->cols, 28);
    QCOMPARE(set->pixels.size(), std::size_t(set->count) * 784);
    std::array<int64_t, 10> per_class{};
    for (uint8_t l : set->labels) {
      QVERIFY(l < 10);
      ++per_class[l];
    }
    // Fashion-MNIST is balanced: 6,000 / 1,000 of each class.
    for (int64_t n : per_class) QCOMPARE(n, set->count / 10);
  }
}

QTEST_GUILESS_MAIN(TestIdxReader)
#include "test_idx_reader.moc"
