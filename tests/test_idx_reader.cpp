// Tests of the IDX reader: raw and .gz round trips (from files and from memory), folder
// loading, and a table of corrupt files that must each raise a DataError naming the file and
// the problem, within an address-space cap so that a large allocation fails the row. Files are
// written by the test itself; no binary fixtures.
#include <QtTest>

#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "data/dataset.h"
#include "data/data_source.h"
#include "data/synthetic.h"
#include "address_space_cap.h"
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

std::string gzip(const std::string& bytes, const fs::path& scratch, const char* mode = "wb") {
  gzFile f = gzopen(scratch.c_str(), mode);
  if (f == nullptr) throw std::runtime_error("test: gzopen failed");
  gzwrite(f, bytes.data(), unsigned(bytes.size()));
  gzclose(f);
  auto out = test::read_bytes(scratch);
  fs::remove(scratch);
  return out;
}

// Incompressible bytes (a fixed xorshift stream), so their gzip is as large as they are.
std::string noise(std::size_t n) {
  std::string out(n, '\0');
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& ch : out) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    ch = static_cast<char>(x >> 56);
  }
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

using test::AddressSpaceCap;

}  // namespace

class TestIdxReader : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void round_trip_data();
  void round_trip();
  void corrupt_data();
  void corrupt();
  void memory_bytes_parse_like_files();
  void out_of_memory_names_the_file();
  void load_dir_prefers_raw();
  void load_dir_missing();
  void default_data_dir_honours_the_environment();
  void fashion_mnist();
  void synthetic_images_are_pinned();
  void synthetic_images_are_learnable_but_not_to_100_percent();

 private:
  fs::path dir() const { return fs::path(tmp_.path().toStdString()); }
  QTemporaryDir tmp_;
  int case_ = 0;
};

void TestIdxReader::initTestCase() { QVERIFY(tmp_.isValid()); }

void TestIdxReader::round_trip_data() {
  QTest::addColumn<bool>("gz_images");
  QTest::addColumn<bool>("gz_labels");
  QTest::addColumn<int>("count");
  QTest::addColumn<bool>("two_members");   // the images .gz as two concatenated gzip members
  QTest::newRow("raw") << false << false << 5 << false;
  QTest::newRow("gz") << true << true << 5 << false;
  QTest::newRow("mixed") << true << false << 3 << false;
  QTest::newRow("gz, larger than one read chunk") << true << true << 6000 << false;   // 4.7 MB > 4 MiB
  QTest::newRow("gz, two members") << true << true << 7 << true;
}

void TestIdxReader::round_trip() {
  QFETCH(bool, gz_images);
  QFETCH(bool, gz_labels);
  QFETCH(int, count);
  QFETCH(bool, two_members);
  const auto px = pixels_for(count), lb = labels_for(count);
  const fs::path images = dir() / (gz_images ? "rt-images.gz" : "rt-images");
  const fs::path labels = dir() / (gz_labels ? "rt-labels.gz" : "rt-labels");
  auto img = idx_images(uint32_t(count), 28, 28, px);
  auto lab = idx_labels(uint32_t(count), lb);
  const fs::path scratch = dir() / "scratch.gz";
  const std::string img_gz = two_members ? gzip(img.substr(0, 1000), scratch) + gzip(img.substr(1000), scratch)
                                         : gzip(img, scratch);
  test::write_bytes(images, gz_images ? img_gz : img);
  test::write_bytes(labels, gz_labels ? gzip(lab, scratch) : lab);

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
  QTest::addColumn<bool>("gz_images");
  QTest::addColumn<bool>("gz_labels");
  QTest::addColumn<QString>("culprit");   // "images" or "labels"
  QTest::addColumn<QString>("keyword");

  auto q = [](const std::string& s) { return QByteArray(s.data(), qsizetype(s.size())); };
  const std::string px3 = pixels_for(3), lb3 = labels_for(3);
  const QByteArray good_img = q(idx_images(3, 28, 28, px3)), good_lab = q(idx_labels(3, lb3));
  const fs::path scratch = dir() / "scratch.gz";
  const auto gz = [&](const std::string& bytes) { return q(gzip(bytes, scratch)); };

  QTest::newRow("missing images") << QByteArray() << good_lab << false << false << "images" << "missing";
  QTest::newRow("missing labels") << good_img << QByteArray() << false << false << "labels" << "missing";
  QTest::newRow("bad magic") << q(idx_images(3, 28, 28, px3, 0x12345678)) << good_lab << false << false << "images"
                             << "bad magic";
  QTest::newRow("labels file as images") << q(idx_labels(3, lb3)) << good_lab << false << false << "images"
                                         << "bad magic";
  QTest::newRow("images file as labels") << good_img << good_img << false << false << "labels" << "bad magic";
  QTest::newRow("float dtype") << q(idx_images(3, 28, 28, px3, 0x00000D03)) << good_lab << false << false
                               << "images" << "dtype";
  QTest::newRow("truncated images") << good_img.left(good_img.size() - 10) << good_lab << false << false << "images"
                                    << "truncated";
  QTest::newRow("truncated labels") << good_img << good_lab.left(good_lab.size() - 1) << false << false << "labels"
                                    << "truncated";
  QTest::newRow("truncated header") << good_img.left(6) << good_lab << false << false << "images" << "truncated";
  QTest::newRow("empty images file") << QByteArray("") << good_lab << false << false << "images" << "truncated";
  QTest::newRow("trailing data") << good_img + QByteArray(5, 'x') << good_lab << false << false << "images"
                                 << "trailing";
  QTest::newRow("count mismatch") << good_img << q(idx_labels(2, labels_for(2))) << false << false << "images"
                                  << "mismatch";
  QTest::newRow("label 10") << good_img << q(idx_labels(3, std::string("\x01\x02\x0A", 3))) << false << false
                            << "labels" << "index 2";
  QTest::newRow("label 255") << good_img << q(idx_labels(3, std::string("\xFF\x02\x03", 3))) << false << false
                             << "labels" << "index 0";
  QTest::newRow("absurd count") << q(idx_images(0x7fffffff, 28, 28, px3)) << good_lab << false << false << "images"
                                << "over the limit of 2739137";
  QTest::newRow("absurd label count") << good_img << q(idx_labels(0xffffffff, lb3)) << false << false << "labels"
                                      << "over the limit of 2739137";
  QTest::newRow("one image over the cap") << q(idx_images(uint32_t(kMaxIdxImages) + 1, 28, 28, px3)) << good_lab
                                          << false << false << "images" << "over the limit";
  QTest::newRow("zero count") << q(idx_images(0, 28, 28, "")) << q(idx_labels(0, "")) << false << false << "images"
                              << "at least 1";
  // 2M x 784 = 1.6 GB declared, within the cap: must fail on the file's size, not allocate.
  const uint32_t huge = 2'000'000;
  const QByteArray huge_lab = q(idx_labels(huge, lb3));
  QTest::newRow("huge declared, tiny file") << q(idx_images(huge, 28, 28, px3)) << huge_lab << false << false
                                            << "images" << "truncated";
  QTest::newRow("huge declared, tiny gz") << gz(idx_images(huge, 28, 28, px3)) << huge_lab << true << false
                                          << "images" << "inflates to at most";
  // A 1.6 MB gzip that may hold the declared 1.6 GB by deflate's ratio, beside a labels file
  // holding only its header: the labels' size is known at once and must be reported before
  // any image is inflated (it was found only after inflating all the images).
  const QByteArray big_gz = gz(idx_images(huge, 28, 28, noise(1'600'000)));
  QTest::newRow("header-only labels beside a big gz") << big_gz << huge_lab << true << false << "labels"
                                                      << "truncated";
  QTest::newRow("header-only gz labels beside a big gz") << big_gz << gz(idx_labels(huge, "")) << true << true
                                                         << "labels" << "inflates to at most";
  QTest::newRow("wrong rows") << q(idx_images(3, 27, 28, pixels_for(3).substr(0, 3 * 27 * 28))) << good_lab << false
                              << false << "images" << "28x28";
  QTest::newRow("wrong cols") << q(idx_images(3, 28, 32, pixels_for(4).substr(0, 3 * 28 * 32))) << good_lab << false
                              << false << "images" << "28x28";
  const std::string gz3 = gzip(idx_images(3, 28, 28, px3), scratch);
  QTest::newRow("truncated gz") << q(gz3.substr(0, gz3.size() / 2)) << good_lab << true << false << "images"
                                << "truncated";
  QTest::newRow("gz without its trailer") << q(gz3.substr(0, gz3.size() - 6)) << good_lab << true << false
                                          << "images" << "truncated";
  std::string bad_gz = gz3;   // the gzip trailer is CRC-32 then size: break the CRC
  bad_gz[bad_gz.size() - 8] = static_cast<char>(bad_gz[bad_gz.size() - 8] ^ 0x5A);
  QTest::newRow("gz with a bad CRC") << q(bad_gz) << good_lab << true << false << "images" << "corrupt";
  QTest::newRow("gz holding trailing data") << gz(idx_images(3, 28, 28, px3 + "xyz")) << good_lab << true << false
                                            << "images" << "trailing";
  QTest::newRow("garbage after the gz stream") << q(gz3 + "garbage") << good_lab << true << false << "images"
                                               << "trailing data after its gzip stream";
  QTest::newRow("a bad second gz member") << q(gz3 + "\x1f\x8b junk") << good_lab << true << false << "images"
                                          << "corrupt";
  // A bomb: 3 images declared, then 4 GB of zeros as 256 gzip members of 16 MiB each (4 MB
  // on disk). Only the declared bytes and one more may be inflated: past the 2 GB cap below,
  // inflating it all would fail the row with "out of memory" instead of "trailing".
  const std::string member = gzip(std::string(16u << 20, '\0'), scratch, "wb9");
  std::string bomb = gzip(idx_images(3, 28, 28, px3), scratch);
  for (int i = 0; i < 256; ++i) bomb += member;
  QTest::newRow("gz bomb after the declared data") << q(bomb) << good_lab << true << false << "images" << "trailing";
}

void TestIdxReader::corrupt() {
  QFETCH(QByteArray, images);
  QFETCH(QByteArray, labels);
  QFETCH(bool, gz_images);
  QFETCH(bool, gz_labels);
  QFETCH(QString, culprit);
  QFETCH(QString, keyword);
  // Unique names per row, so a message naming a stale file cannot pass by accident.
  const std::string tag = std::to_string(++case_);
  const fs::path img = dir() / ("c" + tag + "-images-idx3-ubyte" + (gz_images ? ".gz" : ""));
  const fs::path lab = dir() / ("c" + tag + "-labels-idx1-ubyte" + (gz_labels ? ".gz" : ""));
  if (!images.isNull()) test::write_bytes(img, std::string_view(images.constData(), std::size_t(images.size())));
  if (!labels.isNull()) test::write_bytes(lab, std::string_view(labels.constData(), std::size_t(labels.size())));

  const QString file = test::text_of(culprit == "images" ? img : lab);
  AddressSpaceCap cap(rlim_t(2) << 30);   // the real data set needs ~55 MB; 2 GB is plenty
  const auto check = test::expect_error<DataError>([&] { load_idx_pair(img, lab, "corrupt"); }, {file, keyword});
  qInfo().noquote() << check.message;
  QVERIFY(check);
  // The same bytes from memory give the same verdict, naming the stand-in names.
  const std::string img_bytes(images.constData(), std::size_t(images.size()));
  const std::string lab_bytes(labels.constData(), std::size_t(labels.size()));
  if (!images.isNull() && !labels.isNull()) {
    QVERIFY(test::expect_error<DataError>([&] { parse_idx_pair(img_bytes, lab_bytes, "corrupt", "I", "L"); },
                                          {culprit == "images" ? "'I'" : "'L'", keyword}));
  }
  fs::remove(img);
  fs::remove(lab);
}

void TestIdxReader::memory_bytes_parse_like_files() {
  const fs::path scratch = dir() / "scratch.gz";
  const auto img = idx_images(4, 28, 28, pixels_for(4)), lab = idx_labels(4, labels_for(4));
  for (bool gz : {false, true}) {
    const std::string i = gz ? gzip(img, scratch) : img, l = gz ? gzip(lab, scratch) : lab;
    const Dataset d = parse_idx_pair(i, l, "memory/train");
    QCOMPARE(d.name, std::string("memory/train"));
    QCOMPARE(d.count, int64_t(4));
    QVERIFY(std::string(d.pixels.begin(), d.pixels.end()) == pixels_for(4));
    QVERIFY(std::string(d.labels.begin(), d.labels.end()) == labels_for(4));
  }
  // Default stand-in names.
  QVERIFY(test::expect_error<DataError>([&] { parse_idx_pair(img, "", "x"); }, "IDX file 'labels' is truncated"));
}

void TestIdxReader::out_of_memory_names_the_file() {
#if defined(__SANITIZE_ADDRESS__) || (defined(__has_feature) && __has_feature(address_sanitizer))
  QSKIP("under AddressSanitizer a failed allocation aborts instead of throwing std::bad_alloc");
#endif
  // A valid pair of 1M images (784 MB, sparse files: no disk used) read under a cap of 256 MB
  // more than the process has: the allocation fails, and the error names the file.
  const fs::path img = dir() / "oom-images-idx3-ubyte", lab = dir() / "oom-labels-idx1-ubyte";
  const uint32_t n = 1'000'000;
  test::write_bytes(img, idx_images(n, 28, 28, ""));
  test::write_bytes(lab, idx_labels(n, ""));
  fs::resize_file(img, 16 + uint64_t(n) * 784);
  fs::resize_file(lab, 8 + uint64_t(n));
  {
    AddressSpaceCap cap(rlim_t(256) << 20);
    QVERIFY(test::expect_error<DataError>([&] { load_idx_pair(img, lab, "oom"); },
                                          {test::text_of(img), "out of memory"}));
  }
  fs::remove(img);
  fs::remove(lab);
}

void TestIdxReader::load_dir_prefers_raw() {
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

void TestIdxReader::load_dir_missing() {
  const fs::path absent = dir() / "no-such-folder";
  QVERIFY(test::expect_error<DataError>([&] { load_idx_dir(absent); }, test::text_of(absent)));
  // A folder lacking the test pair names the missing file.
  const fs::path d = dir() / "half-mnist";
  fs::create_directories(d);
  test::write_bytes(d / "train-images-idx3-ubyte", idx_images(1, 28, 28, pixels_for(1)));
  test::write_bytes(d / "train-labels-idx1-ubyte", idx_labels(1, labels_for(1)));
  QVERIFY(test::expect_error<DataError>([&] { load_idx_dir(d); }, {"t10k-images-idx3-ubyte", "missing"}));
}

void TestIdxReader::default_data_dir_honours_the_environment() {
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

void TestIdxReader::fashion_mnist() {
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

// FNV-1a 64 over labels, then pixels: the digest tests/test_synthetic_images.py pins for the
// NumPy remake of the same set (bench/synthetic_images.py), so PyTorch's side of a benchmark
// trains on these very images.
uint64_t labels_then_pixels_digest(const Dataset& d) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const auto* bytes : {&d.labels, &d.pixels})
    for (uint8_t b : *bytes) h = (h ^ b) * 0x100000001B3ull;
  return h;
}

void TestIdxReader::synthetic_images_are_pinned() {
  const SyntheticSpec spec{{7, 5, 3}, 4};
  const Dataset d = make_synthetic_images(spec, 9, 0x7261696E, "pinned");
  QCOMPARE(d.labels.size(), std::size_t(9));
  QCOMPARE(d.pixels.size(), std::size_t(9 * 7 * 5 * 3));
  QCOMPARE(labels_then_pixels_digest(d), uint64_t(2021891162517911781ull));
  QCOMPARE(labels_then_pixels_digest(make_synthetic_images({{32, 32, 3}, 10}, 20, 0x76616C00, "cifar-like")),
           uint64_t(14688361112842884821ull));
  // The first k images of a larger set are the k of a smaller one (--limit-train's prefix).
  const Dataset more = make_synthetic_images(spec, 30, 0x7261696E, "more");
  QVERIFY(std::equal(d.pixels.begin(), d.pixels.end(), more.pixels.begin()));
  QVERIFY(std::equal(d.labels.begin(), d.labels.end(), more.labels.begin()));
}

// A nearest-class-mean reader (means from the set itself) gets about the ceiling the random
// labels leave, 1 - 0.1 x (1 - 1/K): the classes are told apart by their templates, and no
// reader can do much better.
void TestIdxReader::synthetic_images_are_learnable_but_not_to_100_percent() {
  const SyntheticSpec spec{{16, 16, 3}, 5};
  const int n = 3000;
  const Dataset d = make_synthetic_images(spec, n, 11, "learnable");
  const std::size_t per = std::size_t(spec.shape.size());
  std::vector<std::vector<double>> mean(5, std::vector<double>(per, 0.0));
  std::vector<int> count(5, 0);
  for (int i = 0; i < n; ++i) {
    const int l = d.labels[std::size_t(i)];
    QVERIFY(l < 5);
    ++count[std::size_t(l)];
    for (std::size_t p = 0; p < per; ++p) mean[std::size_t(l)][p] += d.pixels[std::size_t(i) * per + p];
  }
  for (int k = 0; k < 5; ++k) {
    QVERIFY(count[std::size_t(k)] > n / 10);
    for (double& v : mean[std::size_t(k)]) v /= count[std::size_t(k)];
  }
  int right = 0;
  for (int i = 0; i < n; ++i) {
    int best = 0;
    double best_d = 1e300;
    for (int k = 0; k < 5; ++k) {
      double dist = 0;
      for (std::size_t p = 0; p < per; ++p) {
        const double e = d.pixels[std::size_t(i) * per + p] - mean[std::size_t(k)][p];
        dist += e * e;
      }
      if (dist < best_d) best_d = dist, best = k;
    }
    right += best == d.labels[std::size_t(i)];
  }
  const double accuracy = double(right) / n, ceiling = 1.0 - kSyntheticRelabelled * (1.0 - 1.0 / 5);
  qInfo("nearest class mean: %.3f (ceiling %.3f)", accuracy, ceiling);
  QVERIFY2(accuracy > ceiling - 0.05 && accuracy < ceiling + 0.02, qPrintable(QString::number(accuracy)));
}

QTEST_GUILESS_MAIN(TestIdxReader)
#include "test_idx_reader.moc"
