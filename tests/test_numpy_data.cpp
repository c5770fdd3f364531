// The data readers beyond IDX (issue 28): NumPy `.npy` files and `.npz` archives as
// keras.datasets keeps them, CIFAR-10's binary batches, and the one place that tells --data's
// formats apart. Real NumPy output (tests/data/numpy, written by make_fixtures.py there) and
// files crafted here byte by byte; a table of bad inputs, each refused naming the file; and
// the same images as IDX and as .npz training to the same digests.
#include <QtTest>

#include <zip.h>

#include <fmt/format.h>

#include "data/cifar_reader.h"
#include "data/data_fit.h"
#include "data/data_source.h"
#include "data/numpy_reader.h"
#include "model/model_text.h"
#include "trainer/mirrored_trainer.h"
#include "test_support.h"
#include "trainer_fixtures.h"

using namespace mb;

namespace {

const std::filesystem::path kFixtures = std::filesystem::path(MB_TEST_DATA_DIR) / "numpy";

// A .npy file as numpy.lib.format writes version 1.0: magic, version, header length, the dict
// padded with spaces to a multiple of 64 bytes, ending in a newline; then the data.
std::string npy(const std::string& descr, const std::string& shape, std::string_view data, int major = 1,
                const std::string& order = "False") {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", descr, order, shape);
  const std::size_t len_bytes = major == 1 ? 2 : 4, prefix = 8 + len_bytes;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  for (std::size_t k = 0; k < len_bytes; ++k) out += char((dict.size() >> (8 * k)) & 0xff);
  return out + dict + std::string(data);
}

std::string bytes_of(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s += char(uint8_t(v));
  return s;
}

// A zip of the given entries (stored or deflated), written with libzip.
void write_zip(const std::filesystem::path& file, const std::vector<std::pair<std::string, std::string>>& entries,
               bool deflate = false) {
  int error = 0;
  zip_t* z = zip_open(file.string().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  QVERIFY(z != nullptr);
  for (const auto& [name, data] : entries) {
    zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
    const zip_int64_t i = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    QVERIFY(i >= 0);
    zip_set_file_compression(z, zip_uint64_t(i), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 9);
  }
  QCOMPARE(zip_close(z), 0);   // writes while the buffers above are still alive
}

// x_train, y_train, x_test, y_test of 2x2 grey images: 3 for training, 2 for validation.
std::vector<std::pair<std::string, std::string>> good_arrays() {
  return {{"x_train.npy", npy("|u1", "(3, 2, 2)", bytes_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}))},
          {"y_train.npy", npy("<i8", "(3,)", std::string("\x01\0\0\0\0\0\0\0\x00\0\0\0\0\0\0\0\x04\0\0\0\0\0\0\0", 24))},
          {"x_test.npy", npy("|u1", "(2, 2, 2)", bytes_of({255, 254, 253, 252, 0, 0, 0, 0}))},
          {"y_test.npy", npy("|u1", "(2,)", bytes_of({2, 3}))}};
}

// Training images as one Dataset would hold them, for IDX and NumPy alike.
bool same_images(const Dataset& a, const Dataset& b) {
  return a.count == b.count && a.shape() == b.shape() && a.pixels == b.pixels && a.labels == b.labels;
}

}  // namespace

class TestNumpyData : public QObject {
  Q_OBJECT
 private slots:
  void numpy_itself_wrote_these() {
    // np.savez_compressed: colour N x H x W x C images, int64 labels, N x 1 test labels.
    const DataSplit rgb = load_npz(kFixtures / "tiny_rgb.npz");
    QCOMPARE(rgb.name, std::string("tiny_rgb"));
    QCOMPARE(rgb.train.count, int64_t(5));
    QCOMPARE(rgb.train.shape(), (ImageShape{4, 3, 3}));
    QCOMPARE(rgb.val.count, int64_t(2));
    QCOMPARE(rgb.train.classes, 3);
    QCOMPARE(rgb.val.classes, 3);   // the same for both splits
    QCOMPARE(rgb.train.labels, (std::vector<uint8_t>{0, 1, 2, 1, 0}));
    QCOMPARE(rgb.val.labels, (std::vector<uint8_t>{2, 1}));
    // Planar (C, H, W), as the models read them: make_fixtures.py's formula.
    for (int i = 0; i < 5; ++i)
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 3; ++c)
          for (int ch = 0; ch < 3; ++ch)
            QCOMPARE(int(rgb.train.image(i)[ch * 12 + r * 3 + c]), (100 * i + 10 * r + c + 50 * ch) % 256);
    // np.savez (stored): grey N x H x W, big-endian int16 and int32 labels.
    const DataSplit grey = load_npz(kFixtures / "tiny_grey.npz");
    QCOMPARE(grey.train.shape(), (ImageShape{2, 2, 1}));
    QCOMPARE(grey.train.labels, (std::vector<uint8_t>{3, 0, 1}));
    QCOMPARE(grey.train.classes, 4);
    QCOMPARE(grey.train.pixels, (std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
    QCOMPARE(grey.val.pixels, (std::vector<uint8_t>{255, 255, 255, 255}));
    // What the window's data picker reads before a run: the header alone.
    const DataSourceInfo info = probe_data_source((kFixtures / "tiny_rgb.npz").string());
    QCOMPARE(info.format, DataFormat::Npz);
    QCOMPARE(info.classes, 0);   // only the labels tell
    QCOMPARE(info.shape, (ImageShape{4, 3, 3}));
  }

  void header_variants() {
    // Version 2.0 (4-byte header length), a Python 2 long, (N, 1) labels, every integer width.
    const NpyArray v2 = parse_npy(npy("<u2", "(2L, 1)", bytes_of({7, 0, 1, 1}), 2), "v2");
    QCOMPARE(v2.shape, (std::vector<int64_t>{2, 1}));
    QCOMPARE(v2.integer_at(1), int64_t(257));
    QCOMPARE(parse_npy(npy(">i4", "(1,)", bytes_of({0xff, 0xff, 0xff, 0xfe})), "be").integer_at(0), int64_t(-2));
    QCOMPARE(parse_npy(npy("|i1", "(1,)", bytes_of({0x80})), "i1").integer_at(0), int64_t(-128));
    QCOMPARE(parse_npy(npy("<f4", "(2, 2)", std::string(16, '\0')), "f4").dtype(), std::string("float32"));
    QCOMPARE(parse_npy(npy("|u1", "()", bytes_of({9})), "scalar").size(), int64_t(1));
    // Labels N x 1 and int32 images within 0..255 are taken.
    const Dataset d = dataset_from_arrays(parse_npy(npy("<i4", "(1, 1, 2)", bytes_of({5, 0, 0, 0, 255, 0, 0, 0})), "x"),
                                          parse_npy(npy("|u1", "(1, 1)", bytes_of({1})), "y"), "d", "x", "y");
    QCOMPARE(d.pixels, (std::vector<uint8_t>{5, 255}));
    QCOMPARE(d.classes, 2);
  }

  void bad_npy_is_refused_naming_the_file_data() {
    QTest::addColumn<QByteArray>("file");
    QTest::addColumn<QString>("expected");
    const auto row = [](const char* name, const std::string& bytes, const char* expected) {
      QTest::newRow(name) << QByteArray(bytes.data(), qsizetype(bytes.size())) << QString(expected);
    };
    const std::string good = npy("|u1", "(2, 2)", bytes_of({1, 2, 3, 4}));
    row("empty", "", "not a NumPy .npy file");
    row("bad magic", "\x93NUMPX" + good.substr(6), "not a NumPy .npy file");
    row("version 4", good.substr(0, 6) + "\x04" + good.substr(7), "version 4.0");
    row("truncated header", good.substr(0, 40), "truncated in its header");
    row("truncated data", good.substr(0, good.size() - 1), "truncated: the shape needs 4 bytes of data, the file holds 3");
    row("trailing bytes", good + "xx", "2 bytes after the data");
    row("huge header", std::string("\x93NUMPY\x02\x00", 8) + bytes_of({0x00, 0x00, 0x10, 0x00}), "NumPy itself reads at most");
    row("structured dtype", npy("|u1", "(1,)", "x").replace(10, 17, "{'descr': [('a', "), "structured dtype");
    row("fortran order", npy("|u1", "(1,)", "x", 1, "True"), "Fortran");
    row("complex", npy("<c8", "(1,)", std::string(8, '\0')), "dtype '<c8'");
    row("object", npy("|O", "(1,)", std::string(8, '\0')), "dtype '|O'");
    row("unknown key", npy("|u1", "(1,)", "x").replace(10, 9, "{'descx':"), "unknown header key 'descx'");
    row("shape not numbers", npy("|u1", "(a,)", "x"), "not a tuple of whole numbers");
    row("shape overflow", npy("|u1", "(99999999999, 99999999999)", ""), "shape too large");
    row("nine dimensions", npy("|u1", "(1, 1, 1, 1, 1, 1, 1, 1, 1)", "x"), "more than 8 dimensions");
    row("too large", npy("<i8", "(1000000000,)", ""), "more than one array may hold");
  }
  void bad_npy_is_refused_naming_the_file() {
    QFETCH(QByteArray, file);
    QFETCH(QString, expected);
    QVERIFY(test::expect_error<DataError>([&] { parse_npy(file.toStdString(), "bad.npy"); }, {"bad.npy", expected}));
  }

  void arrays_that_are_not_a_data_set_are_refused() {
    const auto x = [](const std::string& descr, const std::string& shape, std::string_view data) {
      return parse_npy(npy(descr, shape, data), "x_train");
    };
    const NpyArray labels = parse_npy(npy("|u1", "(1,)", bytes_of({0})), "y_train");
    const NpyArray image = x("|u1", "(1, 1, 1)", bytes_of({0}));
    const auto refused = [&](const NpyArray& a, const NpyArray& b, std::initializer_list<QString> texts) {
      return test::expect_error<DataError>([&] { dataset_from_arrays(a, b, "d", "x_train", "y_train"); }, texts);
    };
    QVERIFY(refused(x("<f4", "(1, 1, 1)", std::string(4, '\0')), labels,
                    {"x_train", "float32 images are not read", "astype('uint8')"}));
    QVERIFY(refused(x("|u1", "(1, 1)", bytes_of({0})), labels, {"x_train", "N x H x W"}));
    QVERIFY(refused(x("<i2", "(1, 1, 1)", bytes_of({0x2c, 0x01})), labels, {"pixel value 300", "0..255"}));
    QVERIFY(refused(x("|u1", "(0, 1, 1)", ""), parse_npy(npy("|u1", "(0,)", ""), "y"), {"no images"}));
    QVERIFY(refused(image, parse_npy(npy("|u1", "(1, 10)", std::string(10, '\0')), "y"), {"y_train", "one-hot"}));
    QVERIFY(refused(image, parse_npy(npy("<f4", "(1,)", std::string(4, '\0')), "y"), {"labels must be integers"}));
    QVERIFY(refused(image, parse_npy(npy("|u1", "(2,)", bytes_of({0, 1})), "y"), {"1 images", "2 labels"}));
    QVERIFY(refused(image, parse_npy(npy("|i1", "(1,)", bytes_of({0xff})), "y"), {"label -1", "outside 0..255"}));
    QVERIFY(refused(x("|u1", "(1, 5000, 1)", std::string(5000, '\0')), labels, {"each side must be 1..1024"}));
  }

  void npz_archives_and_npy_folders() {
    QTemporaryDir tmp;
    const std::filesystem::path dir = tmp.path().toStdString();
    for (bool deflate : {false, true}) {
      write_zip(dir / "data.npz", good_arrays(), deflate);
      const DataSplit s = load_data_source((dir / "data.npz").string());
      QCOMPARE(s.train.count, int64_t(3));
      QCOMPARE(s.train.labels, (std::vector<uint8_t>{1, 0, 4}));
      QCOMPARE(s.val.pixels, (std::vector<uint8_t>{255, 254, 253, 252, 0, 0, 0, 0}));
      QCOMPARE(s.train.classes, 5);
    }
    // The same four arrays as files in a folder.
    const auto folder = dir / "arrays";
    std::filesystem::create_directories(folder);
    for (const auto& [name, data] : good_arrays()) test::write_bytes(folder / name, data);
    QCOMPARE(probe_data_source(folder.string()).format, DataFormat::NpyDir);
    QCOMPARE(load_data_source(folder.string()).train.pixels, load_npz(dir / "data.npz").train.pixels);
    std::filesystem::remove(folder / "y_test.npy");
    QVERIFY(test::expect_error<DataError>([&] { load_data_source(folder.string()); }, {"y_test.npy", "is missing"}));

    // An archive without one of the arrays, with splits of different shapes, a corrupt array.
    auto arrays = good_arrays();
    arrays.erase(arrays.begin() + 3);
    write_zip(dir / "three.npz", arrays);
    QVERIFY(test::expect_error<DataError>([&] { load_npz(dir / "three.npz"); }, {"three.npz", "no array 'y_test'"}));
    arrays = good_arrays();
    arrays[2].second = npy("|u1", "(2, 4)", std::string(8, '\0'));
    write_zip(dir / "flat.npz", arrays);
    QVERIFY(test::expect_error<DataError>([&] { load_npz(dir / "flat.npz"); }, {"flat.npz x_test", "N x H x W"}));
    arrays = good_arrays();
    arrays[2].second = npy("|u1", "(1, 4, 1)", std::string(4, '\0'));
    arrays[3].second = npy("|u1", "(1,)", bytes_of({0}));
    write_zip(dir / "shapes.npz", arrays);
    QVERIFY(test::expect_error<DataError>([&] { load_npz(dir / "shapes.npz"); }, {"2x2x1", "4x1x1", "one image shape"}));
    arrays = good_arrays();
    arrays[0].second.resize(arrays[0].second.size() - 2);
    write_zip(dir / "cut.npz", arrays);
    QVERIFY(test::expect_error<DataError>([&] { load_npz(dir / "cut.npz"); }, {"cut.npz x_train", "truncated"}));
    test::write_bytes(dir / "not.npz", "PK but not a zip");
    QVERIFY(test::expect_error<DataError>([&] { load_npz(dir / "not.npz"); }, {"not.npz", "not a readable zip"}));
    // A bomb: 30 MB of zeros deflates to ~30 KB, past the 200:1 ratio allowed.
    arrays = good_arrays();
    arrays[0].second = npy("|u1", "(30000, 32, 32)", std::string(30000 * 1024, '\0'));
    write_zip(dir / "bomb.npz", arrays, true);
    QVERIFY(test::expect_error<DataError>([&] { load_npz(dir / "bomb.npz"); }, {"bomb.npz", "x_train.npy", "200:1"}));
  }

  void cifar_batches() {
    QTemporaryDir tmp;
    const std::filesystem::path dir = tmp.path().toStdString();
    // Record i: label i % 10, every red byte i, green 100 + i, blue 200 + i (planar as stored).
    const auto batch = [](int first, int n) {
      std::string b;
      for (int i = first; i < first + n; ++i) {
        b += char(i % 10);
        b += std::string(1024, char(i)) + std::string(1024, char(100 + i)) + std::string(1024, char(200 + i));
      }
      return b;
    };
    test::write_bytes(dir / "data_batch_1.bin", batch(0, 3));
    test::write_bytes(dir / "data_batch_2.bin", batch(3, 2));
    test::write_bytes(dir / "test_batch.bin", batch(20, 1));
    QCOMPARE(probe_data_source(dir.string()).shape, (ImageShape{32, 32, 3}));
    QCOMPARE(probe_data_source(dir.string()).classes, 10);
    const DataSplit s = load_data_source(dir.string());
    QCOMPARE(s.name, std::string("cifar-10"));
    QCOMPARE(s.train.count, int64_t(5));
    QCOMPARE(s.train.labels, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
    QCOMPARE(int(s.train.image(4)[0]), 4);
    QCOMPARE(int(s.train.image(4)[1024]), 104);
    QCOMPARE(int(s.train.image(4)[3071]), 204);
    QCOMPARE(s.val.count, int64_t(1));
    // The reference CNN reads 28x28x1: the run is refused naming both shapes.
    QVERIFY(data_misfit(s.train, ModelSpec()).find("32x32x3") != std::string::npos);

    std::string bad = batch(0, 1);
    bad[0] = 10;
    QVERIFY(test::expect_error<DataError>([&] { Dataset d; append_cifar_batch(bad, "b.bin", d); },
                                          {"b.bin", "record 0 has label 10"}));
    QVERIFY(test::expect_error<DataError>([&] { Dataset d; append_cifar_batch(batch(0, 2).substr(1), "b.bin", d); },
                                          {"b.bin", "not a whole number of CIFAR-10 records"}));
    QVERIFY(test::expect_error<DataError>([&] { Dataset d; append_cifar_batch(std::string(2 * 3074, '\0'), "c100.bin", d); },
                                          {"CIFAR-100"}));
    std::filesystem::remove(dir / "test_batch.bin");
    QVERIFY(test::expect_error<DataError>([&] { load_data_source(dir.string()); }, {"test_batch.bin", "is missing"}));
  }

  // The first target: the same images as IDX files and as an .npz train to the same
  // digests (same seed, same model), and the data agree image for image.
  void npz_trains_as_the_same_idx_images() {
    QTemporaryDir tmp;
    const std::filesystem::path dir = tmp.path().toStdString();
    test::write_synthetic_idx_dir(dir / "idx", 256, 64);
    const DataSplit idx = load_data_source((dir / "idx").string());
    const auto arrays_of = [](const Dataset& d) {
      const std::string n = std::to_string(d.count);
      return std::pair{npy("|u1", "(" + n + ", 28, 28)", std::string(d.pixels.begin(), d.pixels.end())),
                       npy("<i8", "(" + n + ",)", [&] {
                         std::string y;
                         for (uint8_t l : d.labels) y += std::string(1, char(l)) + std::string(7, '\0');
                         return y;
                       }())};
    };
    const auto [xt, yt] = arrays_of(idx.train);
    const auto [xv, yv] = arrays_of(idx.val);
    write_zip(dir / "same.npz", {{"x_train.npy", xt}, {"y_train.npy", yt}, {"x_test.npy", xv}, {"y_test.npy", yv}}, true);
    auto npz = std::make_shared<DataSplit>(load_data_source((dir / "same.npz").string()));
    QVERIFY(same_images(npz->train, idx.train));
    QVERIFY(same_images(npz->val, idx.val));
    QCOMPARE(npz->train.classes, idx.train.classes);   // labels 0..9: ten classes, as IDX says
    TrainConfig c = test::small_config("cpu:2", "onednn");
    const RunRecord a = MirroredTrainer(c, std::make_shared<DataSplit>(idx)).run();
    const RunRecord b = MirroredTrainer(c, npz).run();
    QVERIFY(!a.epochs.empty() && !b.epochs.empty());
    QCOMPARE(QString::fromStdString(b.epochs.back().param_digest), QString::fromStdString(a.epochs.back().param_digest));
    QCOMPARE(b.epochs.back().val_acc, a.epochs.back().val_acc);
  }

  void formats_are_told_apart() {
    QCOMPARE(probe_data_source("").format, DataFormat::Idx);
    QCOMPARE(std::string(format_name(DataFormat::Cifar)), std::string("CIFAR-10 binary batches"));
    QCOMPARE(probe_data_source("synthetic:8x8x3:4").classes, 4);
    QCOMPARE(probe_data_source("synthetic:8x8x3:4").shape, (ImageShape{8, 8, 3}));
    QCOMPARE(probe_data_source((kFixtures / "tiny_grey.npz").string()).shape, (ImageShape{2, 2, 1}));
    // A path that is none of them goes to the IDX reader, which names what is missing.
    QVERIFY(test::expect_error<DataError>([&] { load_data_source("/nonexistent/folder"); }, {"/nonexistent/folder"}));
    QVERIFY(test::expect_error<DataError>([&] { load_data_source("/nonexistent/data.npz"); },
                                          {"/nonexistent/data.npz", "does not exist"}));
  }
};

QTEST_GUILESS_MAIN(TestNumpyData)
#include "test_numpy_data.moc"
