// Image folders (issue 28): PNG and JPEG files decoded as Pillow decodes them (fixtures in
// tests/data/images, written with Pillow by make_fixtures.py there, each beside the pixels
// Pillow reads from it), hostile files refused before they cost memory (the fuzz seeds in
// tests/fuzz/image), and folders in Keras's train/<class>/ and test/<class>/ layout, written
// here with libpng's writer from known pixels and read back image for image.
#include <QtTest>

#include <png.h>

#include <functional>

#include <fmt/format.h>

#include "data/data_source.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "util/error.h"
#include "util/read_file.h"
#include "test_support.h"

using namespace mb;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(MB_TEST_DATA_DIR) / "images";
const fs::path kSeeds = fs::path(MB_TEST_DATA_DIR).parent_path() / "fuzz" / "image";

std::string file_bytes(const fs::path& p) { return read_file_bounded(p, kMaxImageFileBytes, "an image file"); }

std::vector<uint8_t> decoded(const fs::path& file, int channels) {
  const std::string bytes = file_bytes(file);
  const ImageInfo info = read_image_info(bytes, file.string());
  std::vector<uint8_t> out(std::size_t(info.height * info.width * channels));
  decode_image(bytes, info, channels, out.data(), file.string());
  return out;
}

std::vector<uint8_t> raw(const fs::path& file) {
  const std::string b = test::read_bytes(file.string());
  return {b.begin(), b.end()};
}

// A PNG of `pixels` (H x W x C interleaved, C 1 or 3) written with libpng's simplified writer.
void write_png(const fs::path& file, int height, int width, int channels, const uint8_t* pixels) {
  fs::create_directories(file.parent_path());
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  QVERIFY2(png_image_write_to_file(&image, file.string().c_str(), 0, pixels, 0, nullptr) != 0, image.message);
}

// Image i of a Dataset (planar) as interleaved H x W x C.
std::vector<uint8_t> interleaved(const Dataset& d, int64_t i) {
  const int64_t plane = int64_t(d.rows) * d.cols;
  std::vector<uint8_t> out(std::size_t(plane * d.channels));
  for (int64_t p = 0; p < plane; ++p)
    for (int c = 0; c < d.channels; ++c) out[std::size_t(p * d.channels + c)] = d.image(i)[c * plane + p];
  return out;
}

// Known images, `per_class` for each of `classes` classes in each split: image k of class c has
// every pixel's value depend on (split, c, k, position), so a swapped file or class shows.
struct KnownFolder {
  int height = 6, width = 5, channels = 1, classes = 3;
  std::vector<std::vector<uint8_t>> train, test;   // in the reader's order: class by class, file by file
  std::vector<uint8_t> train_labels, test_labels;
};

KnownFolder write_known_folder(const fs::path& dir, int channels, int per_class = 4) {
  KnownFolder k;
  k.channels = channels;
  for (int split = 0; split < 2; ++split)
    for (int c = 0; c < k.classes; ++c)
      for (int i = 0; i < per_class - split; ++i) {
        std::vector<uint8_t> img(std::size_t(k.height * k.width * channels));
        for (std::size_t p = 0; p < img.size(); ++p) img[p] = uint8_t((split * 97 + c * 61 + i * 13 + p * 7) % 256);
        // File names sort as the images were made; the class folders' names sort as 0, 1, 2.
        const fs::path file = dir / (split == 0 ? "train" : "test") / fmt::format("{}_class", char('a' + c)) /
                              fmt::format("img{:03}.png", i);
        write_png(file, k.height, k.width, channels, img.data());
        (split == 0 ? k.train : k.test).push_back(img);
        (split == 0 ? k.train_labels : k.test_labels).push_back(uint8_t(c));
      }
  return k;
}

void check_same(const Dataset& d, const std::vector<std::vector<uint8_t>>& images, const std::vector<uint8_t>& labels) {
  QCOMPARE(d.count, int64_t(images.size()));
  QCOMPARE(d.labels, labels);
  for (int64_t i = 0; i < d.count; ++i) QVERIFY2(interleaved(d, i) == images[std::size_t(i)], qPrintable(QString::number(i)));
}

}  // namespace

class TestImageData : public QObject {
  Q_OBJECT
 private slots:
  // Every fixture decodes to exactly the bytes Pillow gave for it, as RGB and as grey: the
  // same libjpeg-turbo with the same defaults, alpha dropped, Pillow's luma for grey.
  void decodes_as_pillow_does_data() {
    QTest::addColumn<QString>("file");
    for (const char* f : {"colour.jpg", "colour_444.jpg", "grey.jpg", "palette.png", "rgba.png", "grey.png"})
      QTest::newRow(f) << QString(f);
  }
  void decodes_as_pillow_does() {
    QFETCH(QString, file);
    const fs::path path = kFixtures / file.toStdString();
    QCOMPARE(decoded(path, 3), raw(kFixtures / (file.toStdString() + ".rgb")));
    QCOMPARE(decoded(path, 1), raw(kFixtures / (file.toStdString() + ".l")));
  }

  void headers_give_size_and_kind() {
    const ImageInfo jpeg = read_image_info(file_bytes(kFixtures / "colour.jpg"), "colour.jpg");
    QCOMPARE(jpeg.codec, ImageCodec::Jpeg);
    QCOMPARE(jpeg.height, 10);
    QCOMPARE(jpeg.width, 12);
    QVERIFY(jpeg.colour);
    QVERIFY(!read_image_info(file_bytes(kFixtures / "grey.jpg"), "grey.jpg").colour);
    QVERIFY(read_image_info(file_bytes(kFixtures / "palette.png"), "palette.png").colour);
    const ImageInfo png = read_image_info(file_bytes(kFixtures / "grey.png"), "grey.png");
    QCOMPARE(png.codec, ImageCodec::Png);
    QVERIFY(!png.colour);
    QVERIFY(looks_like_image(file_bytes(kFixtures / "grey.png")));
    QVERIFY(!looks_like_image("GIF89a"));
  }

  // The fuzz corpus's hostile seeds: a header claiming 100,000 x 100,000 pixels (a few bytes
  // that would ask for 30 GB) is refused from the header, before any pixel; truncated files
  // are refused rather than half-decoded.
  void hostile_images_are_refused_data() {
    QTest::addColumn<QString>("seed");
    QTest::addColumn<QString>("expected");
    QTest::newRow("PNG bomb") << "seed-png-bomb-header" << "100000x100000 pixels";
    QTest::newRow("JPEG bomb") << "seed-jpeg-bomb-header" << "65000x65000 pixels";
    QTest::newRow("PNG truncated") << "seed-png-truncated" << "PNG";
    QTest::newRow("PNG too little data") << "seed-png-too-little-data" << "PNG";
    QTest::newRow("JPEG truncated") << "seed-jpeg-truncated" << "JPEG";
  }
  void hostile_images_are_refused() {
    QFETCH(QString, seed);
    QFETCH(QString, expected);
    const fs::path file = kSeeds / seed.toStdString();
    QVERIFY(test::expect_error<DataError>([&] { decoded(file, 3); }, {QString::fromStdString(file.string()), expected}));
  }

  void not_an_image_is_named() {
    QVERIFY(test::expect_error<DataError>([] { read_image_info("GIF89a....", "cat.gif"); },
                                          {"cat.gif", "neither a PNG nor a JPEG"}));
    QVERIFY(test::expect_error<DataError>([] { read_image_info("", "empty.png"); }, {"empty.png"}));
  }

  // Keras's layout read back image for image, label for label: classes in sorted order, files
  // in sorted order, a text file, a hidden file and a sub-folder of a class skipped, an
  // upper-case extension read; a test folder lacking a class is fine.
  void image_folder_reads_the_keras_layout() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    const KnownFolder k = write_known_folder(dir, 1);
    std::ofstream(dir / "train" / "a_class" / "notes.txt") << "not an image";
    std::ofstream(dir / "train" / "a_class" / ".hidden.png") << "not read";
    fs::create_directories(dir / "train" / "b_class" / "nested");
    const DataSplit s = load_data_source(dir.string());
    QCOMPARE(s.train.shape(), (ImageShape{6, 5, 1}));
    QCOMPARE(s.train.classes, 3);
    QCOMPARE(s.val.classes, 3);
    check_same(s.train, k.train, k.train_labels);
    check_same(s.val, k.test, k.test_labels);

    const DataSourceInfo info = probe_data_source(dir.string());
    QCOMPARE(info.format, DataFormat::ImageFolder);
    QCOMPARE(info.shape, (ImageShape{6, 5, 1}));
    QCOMPARE(info.classes, 3);
    QCOMPARE(std::string(format_name(info.format)), std::string("PNG/JPEG image folders"));

    fs::rename(dir / "train" / "c_class" / "img000.png", dir / "train" / "c_class" / "img000.PNG");
    QCOMPARE(load_image_folder(dir).train.count, s.train.count);
    fs::remove_all(dir / "test" / "b_class");
    QCOMPARE(load_image_folder(dir).val.count, s.val.count - 3);
  }

  // Colour images are stored planar, as the models read them; a grey image among colour ones
  // is repeated into red, green and blue.
  void colour_folders_are_planar() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    KnownFolder k = write_known_folder(dir, 3, 2);
    const DataSplit s = load_image_folder(dir);
    QCOMPARE(s.train.shape(), (ImageShape{6, 5, 3}));
    check_same(s.train, k.train, k.train_labels);
    std::vector<uint8_t> grey(30, 200);
    write_png(dir / "train" / "c_class" / "zz_grey.png", 6, 5, 1, grey.data());
    const DataSplit mixed = load_image_folder(dir);
    QCOMPARE(interleaved(mixed.train, mixed.train.count - 1), std::vector<uint8_t>(90, 200));
  }

  void bad_folders_are_named() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    write_known_folder(dir, 1, 2);
    const auto fails = [&](std::initializer_list<QString> texts) {
      return test::expect_error<DataError>([&] { load_data_source(dir.string()); }, texts);
    };
    // A file of another size, named with the first one's.
    std::vector<uint8_t> big(7 * 5, 1);
    write_png(dir / "train" / "b_class" / "wide.png", 5, 7, 1, big.data());
    QVERIFY(fails({"wide.png", "5x7 pixels (height x width)", "a_class/img000.png", "6x5", "one size"}));
    fs::remove(dir / "train" / "b_class" / "wide.png");
    // A corrupt file, named.
    std::ofstream(dir / "test" / "a_class" / "broken.png", std::ios::binary) << std::string("\x89PNG\r\n\x1a\n", 8) << "junk";
    QVERIFY(fails({"broken.png", "PNG"}));
    fs::remove(dir / "test" / "a_class" / "broken.png");
    // A class the training set lacks.
    fs::create_directories(dir / "test" / "d_class");
    QVERIFY(fails({"d_class", "a class"}));
    fs::remove_all(dir / "test" / "d_class");
    // An empty class folder.
    fs::create_directories(dir / "train" / "d_class");
    QVERIFY(fails({"d_class", "holds no PNG or JPEG files"}));
    fs::remove_all(dir / "train" / "d_class");
    QCOMPARE(load_data_source(dir.string()).train.count, int64_t(6));   // whole again
    // Keras's other layout, class folders with a validation fraction: named, with what to do.
    const fs::path flat = dir / "flat";
    fs::create_directories(flat);
    fs::rename(dir / "train" / "a_class", flat / "a_class");
    fs::rename(dir / "train" / "b_class", flat / "b_class");
    QCOMPARE(data_format(flat.string()), DataFormat::ImageFolder);
    for (const auto& read : {std::function<void()>([&] { load_data_source(flat.string()); }),
                             std::function<void()>([&] { probe_data_source(flat.string()); })})
      QVERIFY(test::expect_error<DataError>(read, {"class sub-folders of images but no train/ and test/", "test/<class>/"}));
    // IDX files beside such folders say what the folder is (the images: samples, say).
    std::ofstream(flat / "train-images-idx3-ubyte.gz") << "";
    QCOMPARE(data_format(flat.string()), DataFormat::Idx);
    fs::remove(flat / "train-images-idx3-ubyte.gz");
    fs::rename(flat / "a_class", dir / "train" / "a_class");
    fs::rename(flat / "b_class", dir / "train" / "b_class");
    // No test folder, and one class only.
    fs::remove_all(dir / "test");
    QVERIFY(fails({"no test/ folder"}));
    fs::create_directories(dir / "test");
    fs::remove_all(dir / "train" / "b_class");
    fs::remove_all(dir / "train" / "c_class");
    QVERIFY(fails({"1 class sub-folder(s)", "at least 2"}));
  }
};

QTEST_GUILESS_MAIN(TestImageData)
#include "test_image_data.moc"
