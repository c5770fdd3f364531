// Tests of safetensors checkpoints: bit-exact round trip, the on-disk layout PyTorch's
// loader expects, and corrupt files (truncated, bad header, wrong dtype/shape, missing
// tensor) each raising a DataError that names the file.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "model/cnn_spec.h"
#include "model/init_params.h"
#include "model/model_text.h"
#include "records/checkpoint.h"
#include "test_support.h"
#include "util/error.h"

using namespace mb;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<float> sample_params() {
  std::vector<float> p(cnn::kReferenceParams);
  init_params(ModelSpec{}, p, 99);
  // Values that a text format or a careless copy would mangle.
  p[0] = -0.0f;
  p[1] = std::numeric_limits<float>::denorm_min();
  p[2] = std::numeric_limits<float>::infinity();
  p[3] = std::numeric_limits<float>::quiet_NaN();
  p[cnn::kReferenceParams - 1] = 1234.5f;
  return p;
}

uint64_t le64(const std::string& b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[std::size_t(i)]);
  return v;
}

std::string le64_bytes(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

struct Parsed {
  json header;
  std::string data;
};

Parsed split(const std::string& bytes) {
  const uint64_t n = le64(bytes);
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

std::string assemble(const json& header, const std::string& data) {
  const std::string text = header.dump();
  return le64_bytes(text.size()) + text + data;
}

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void round_trip_bit_exact();
  void header_layout();
  void no_metadata_key_when_empty();
  void extra_tensors_ignored();
  void corrupt_data();
  void corrupt();
  void missing_file();
  void bytes_round_trip_bit_exact();
  void save_rejects_wrong_size();
  void what_if_models_round_trip_with_their_shapes();
  void any_model_round_trips_by_its_text();

 private:
  fs::path dir() const { return fs::path(tmp_.path().toStdString()); }
  QTemporaryDir tmp_;
  std::string good_;   // bytes of a valid checkpoint
};

void TestSafetensors::initTestCase() {
  QVERIFY(tmp_.isValid());
  save_checkpoint(dir() / "good.safetensors", ModelSpec{}, sample_params(), {{"epoch", "3"}});
  good_ = test::read_bytes(dir() / "good.safetensors");
}

void TestSafetensors::round_trip_bit_exact() {
  const auto p = sample_params();
  const fs::path file = dir() / "ckpt" / "model.safetensors";   // folder is created
  save_checkpoint(file, ModelSpec{}, p, {{"run_id", "abc"}});
  const auto q = load_checkpoint(file).params;
  QCOMPARE(q.size(), p.size());
  QVERIFY(std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0);
  // Saving again replaces the file atomically and leaves no temporaries.
  save_checkpoint(file, ModelSpec{}, q);
  QCOMPARE(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);
}

void TestSafetensors::header_layout() {
  const auto p = sample_params();
  const uint64_t n = le64(good_);
  QCOMPARE(n % 8, uint64_t(0));                                     // data section 8-byte aligned
  QCOMPARE(uint64_t(good_.size()), 8 + n + cnn::kReferenceParams * 4);   // no holes, nothing extra
  QCOMPARE(good_[8], '{');
  const Parsed f = split(good_);
  QCOMPARE(f.header.size(), std::size_t(cnn::kNumParamTensors + 1));
  QCOMPARE(f.header.at("__metadata__"), json({{"epoch", "3"}, {"model", "conv32-pool-conv64-pool-dense64-dense10"}}));
  for (const auto& t : cnn::param_tensors()) {
    const json& e = f.header.at(std::string(t.name));
    QCOMPARE(e.at("dtype").get<std::string>(), std::string("F32"));
    std::vector<int64_t> shape(t.shape.begin(), t.shape.begin() + t.rank);
    QVERIFY(e.at("shape").get<std::vector<int64_t>>() == shape);
    const auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
    QCOMPARE(off.size(), std::size_t(2));
    QCOMPARE(off[0], uint64_t(t.offset * 4));
    QCOMPARE(off[1], uint64_t((t.offset + t.size) * 4));
    // The bytes there are the tensor, little-endian F32.
    QVERIFY(std::memcmp(f.data.data() + off[0], p.data() + t.offset, t.size * 4) == 0);
  }
  const unsigned char* last = reinterpret_cast<const unsigned char*>(f.data.data() + f.data.size() - 4);
  QCOMPARE(last[0] | (last[1] << 8) | (last[2] << 16) | (uint32_t(last[3]) << 24), uint32_t(0x449A5000));   // 1234.5f
}

// The metadata always names the model (its canonical text), even when nothing else is given.
void TestSafetensors::no_metadata_key_when_empty() {
  save_checkpoint(dir() / "plain.safetensors", ModelSpec{}, sample_params());
  const Parsed f = split(test::read_bytes(dir() / "plain.safetensors"));
  QCOMPARE(f.header.at("__metadata__"), json({{"model", "conv32-pool-conv64-pool-dense64-dense10"}}));
}

void TestSafetensors::extra_tensors_ignored() {
  Parsed f = split(good_);
  f.header["optimizer.step"] = {{"dtype", "I64"}, {"shape", json::array()}, {"data_offsets", {0, 8}}};
  const fs::path file = dir() / "extra.safetensors";
  test::write_bytes(file, assemble(f.header, f.data));
  const auto q = load_checkpoint(file).params;
  const auto p = sample_params();
  QVERIFY(std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0);
}

// Each row: the bytes of a damaged checkpoint and a keyword its DataError must contain.
void TestSafetensors::corrupt_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("keyword");
  auto q = [](const std::string& s) { return QByteArray(s.data(), qsizetype(s.size())); };
  const Parsed f = split(good_);
  auto with = [&](const char* tensor, const char* key, const json& value) {
    json h = f.header;
    h[tensor][key] = value;
    return q(assemble(h, f.data));
  };

  QTest::newRow("empty file") << QByteArray("") << "truncated";
  QTest::newRow("4 bytes") << q(good_.substr(0, 4)) << "truncated";
  QTest::newRow("truncated data") << q(good_.substr(0, good_.size() - 4)) << "truncated";
  QTest::newRow("truncated header") << q(good_.substr(0, 8 + 20)) << "truncated";
  QTest::newRow("header length past end") << q(le64_bytes(good_.size()) + good_.substr(8)) << "header length";
  QTest::newRow("header length 2^40") << q(le64_bytes(1ull << 40) + good_.substr(8)) << "header length";
  QTest::newRow("header not JSON") << q(le64_bytes(8) + "{\"a\": 1," + f.data) << "JSON";
  QTest::newRow("header is an array") << q(assemble(json::array({1, 2}), f.data)) << "JSON object";
  QTest::newRow("F16 dtype") << with("fc1.weight", "dtype", "F16") << "dtype";
  QTest::newRow("dtype missing") << q([&] {
    json h = f.header;
    h["conv2.bias"].erase("dtype");
    return assemble(h, f.data);
  }()) << "dtype";
  QTest::newRow("wrong shape") << with("conv1.weight", "shape", {32, 3, 3, 1}) << "shape";
  QTest::newRow("wrong rank") << with("fc2.bias", "shape", {10, 1}) << "shape";
  QTest::newRow("offsets too short") << with("fc2.weight", "data_offsets", {0, 4}) << "data_offsets";
  QTest::newRow("offsets past end") << with("fc2.bias", "data_offsets", {487720, 487760}) << "data_offsets";
  QTest::newRow("offsets reversed") << with("fc1.bias", "data_offsets", {100, 0}) << "data_offsets";
  QTest::newRow("offsets negative") << with("fc1.bias", "data_offsets", {-4, 252}) << "data_offsets";
  QTest::newRow("offsets not numbers") << with("fc1.bias", "data_offsets", "0-256") << "data_offsets";
  QTest::newRow("missing tensor") << q([&] {
    json h = f.header;
    h.erase("conv2.weight");
    return assemble(h, f.data);
  }()) << "conv2.weight";
  // A million levels of nesting: describing the bad value must not recurse through it
  // (json::dump does, and overflowed the stack).
  auto deep = [&](const char* key) {
    const std::size_t depth = 1'000'000;
    const std::string nest = std::string(depth, '[') + std::string(depth, ']');
    const std::string dtype = std::string(key) == "dtype" ? nest : "\"F32\"";
    const std::string shape = std::string(key) == "shape" ? nest : "[32,1,3,3]";
    const std::string text = "{\"conv1.weight\":{\"dtype\":" + dtype + ",\"shape\":" + shape +
                             ",\"data_offsets\":[0,1152]}}";
    return q(le64_bytes(text.size()) + text + std::string(1152, '\0'));
  };
  QTest::newRow("shape nested a million deep") << deep("shape") << "has shape (array of 1 entries)";
  QTest::newRow("dtype nested a million deep") << deep("dtype") << "has dtype (array of 1 entries)";
  QTest::newRow("tensor not an object") << q([&] {
    json h = f.header;
    h["fc1.weight"] = "here";
    return assemble(h, f.data);
  }()) << "fc1.weight";
}

void TestSafetensors::corrupt() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, keyword);
  const fs::path file = dir() / (std::string(QTest::currentDataTag()) + ".safetensors");
  test::write_bytes(file, std::string_view(bytes.constData(), std::size_t(bytes.size())));
  const auto check = test::expect_error<DataError>([&] { load_checkpoint(file); }, {test::text_of(file), keyword});
  qInfo().noquote() << check.message;
  QVERIFY(check);
  // The in-memory entry point gives the same verdict.
  const std::string bytes_copy(bytes.constData(), std::size_t(bytes.size()));
  QVERIFY(test::expect_error<DataError>([&] { load_checkpoint_bytes(bytes_copy, "in-memory"); },
                                        {"'in-memory'", keyword}));
}

void TestSafetensors::missing_file() {
  const fs::path file = dir() / "absent.safetensors";
  QVERIFY(test::expect_error<DataError>([&] { load_checkpoint(file); }, test::text_of(file)));
}

void TestSafetensors::bytes_round_trip_bit_exact() {
  const auto p = sample_params();
  const auto q = load_checkpoint_bytes(good_).params;
  QCOMPARE(q.size(), p.size());
  QVERIFY(std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0);
}

void TestSafetensors::save_rejects_wrong_size() {
  std::vector<float> p(10);
  QVERIFY_THROWS_EXCEPTION(Error, save_checkpoint(dir() / "small.safetensors", ModelSpec{}, p));
  QVERIFY(!fs::exists(dir() / "small.safetensors"));
}

// A what-if model's checkpoint holds its own shapes (fc1 [N, 1600], fc2 [10, N]), as
// torch.nn.Linear(1600, N) expects, and loads back to its own parameter count.
void TestSafetensors::what_if_models_round_trip_with_their_shapes() {
  for (int hidden : {1, 1024}) {
    const ModelSpec model = reference_family(hidden);
    std::vector<float> p(model.param_count());
    init_params(model, p, 5);
    const fs::path file = dir() / ("dense" + std::to_string(hidden) + ".safetensors");
    save_checkpoint(file, model, p);
    Parsed f = split(test::read_bytes(file));
    QVERIFY(f.header.at("fc1.weight").at("shape") == json({hidden, 1600}));
    QVERIFY(f.header.at("fc2.weight").at("shape") == json({10, hidden}));
    QVERIFY(f.header.at("conv2.weight").at("shape") == json({64, 32, 3, 3}));
    const Checkpoint q = load_checkpoint(file);
    QVERIFY(q.model == model);
    QVERIFY(q.params == p);
    // A file of an older version has no model text: fc1's rows still give the width.
    f.header.erase("__metadata__");
    test::write_bytes(file, assemble(f.header, f.data));
    QVERIFY(load_checkpoint(file).model == model);
  }
  // A count that is not the model's is refused, naming both.
  std::vector<float> odd(cnn::kReferenceParams + 1);
  QVERIFY(test::expect_error<Error>([&] { save_checkpoint(dir() / "odd.safetensors", ModelSpec{}, odd); }, "121930"));
}

// Any model: layers named in order with PyTorch's shapes, the model read back from the metadata;
// a model text this version cannot train is a DataError naming it.
void TestSafetensors::any_model_round_trips_by_its_text() {
  const ModelSpec model = model_from_text("32x32x3:conv8@5s_nobias-pool-conv16-avgpool@s-drop20-dense24-dense7");
  std::vector<float> p(model.param_count());
  init_params(model, p, 11);
  const fs::path file = dir() / "any.safetensors";
  save_checkpoint(file, model, p, {{"run_id", "r"}});
  Parsed f = split(test::read_bytes(file));
  QVERIFY(f.header.at("conv1.weight").at("shape") == json({8, 3, 5, 5}));
  QVERIFY(!f.header.contains("conv1.bias"));
  QVERIFY(f.header.at("conv2.weight").at("shape") == json({16, 8, 3, 3}));
  QVERIFY(f.header.at("fc1.weight").at("shape") == json({24, 16 * 7 * 7}));
  QVERIFY(f.header.at("fc2.bias").at("shape") == json({7}));
  const Checkpoint q = load_checkpoint(file);
  QVERIFY(q.model == model);
  QVERIFY(q.params == p);
  f.header["__metadata__"]["model"] = "conv8-lstm-dense10";
  test::write_bytes(file, assemble(f.header, f.data));
  QVERIFY(test::expect_error<DataError>([&] { load_checkpoint(file); }, {"lstm", test::text_of(file)}));
}

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
