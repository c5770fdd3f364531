// Keras model files read as mirrorbench models (keras/keras_model.h) and the zip reader under
// them (archive/zip_archive.h): every format's fixture imports with Keras's own trainable
// parameter count (worked out by hand below) or is refused naming its layer; hostile archives
// are refused within a memory cap. Fixtures: tests/data/keras/ (hand-written, see its README)
// and models built here, so each format difference is one visible edit.
#include <QtTest>

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "archive/zip_archive.h"
#include "keras/keras_model.h"
#include "model/model_text.h"
#include "address_space_cap.h"
#include "test_zip_fixtures.h"
#include "util/error.h"

using namespace mb;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(MB_TEST_DATA_DIR) / "keras";

// A Keras 2 (tf.keras) layer entry as model.to_json() writes it, noise fields included.
json k2(const std::string& cls, json config) {
  config["trainable"] = true;
  config["dtype"] = "float32";
  if (cls == "Conv2D" || cls == "Dense") {
    config["kernel_initializer"] = {{"class_name", "GlorotUniform"}, {"config", {{"seed", nullptr}}}};
    config["bias_initializer"] = {{"class_name", "Zeros"}, {"config", json::object()}};
    config["kernel_regularizer"] = nullptr;
  }
  return {{"class_name", cls}, {"config", config}};
}
json conv(const std::string& name, int filters, int k, const std::string& act = "relu", const std::string& pad = "valid") {
  return k2("Conv2D", {{"name", name}, {"filters", filters}, {"kernel_size", {k, k}}, {"strides", {1, 1}},
                       {"padding", pad}, {"data_format", "channels_last"}, {"dilation_rate", {1, 1}}, {"groups", 1},
                       {"activation", act}, {"use_bias", true}});
}
json pool(const std::string& name) {
  return k2("MaxPooling2D", {{"name", name}, {"pool_size", {2, 2}}, {"padding", "valid"}, {"strides", {2, 2}},
                             {"data_format", "channels_last"}});
}
json dense(const std::string& name, int units, const std::string& act = "relu") {
  return k2("Dense", {{"name", name}, {"units", units}, {"activation", act}, {"use_bias", true}});
}
json flatten(const std::string& name = "flatten") { return k2("Flatten", {{"name", name}, {"data_format", "channels_last"}}); }
json input_layer(json shape) { return k2("InputLayer", {{"name", "input_1"}, {"batch_input_shape", shape}, {"sparse", false}}); }
json sequential(json layers) {
  return {{"class_name", "Sequential"},
          {"config", {{"name", "sequential"}, {"layers", layers}}},
          {"keras_version", "2.13.1"},
          {"backend", "tensorflow"}};
}
// The reference CNN as tf.keras 2.x writes it (batch_input_shape on the first Conv2D).
json reference_cnn() {
  json first = conv("conv2d", 32, 3);
  first["config"]["batch_input_shape"] = {nullptr, 28, 28, 1};
  return sequential({first, pool("max_pooling2d"), conv("conv2d_1", 64, 3), pool("max_pooling2d_1"), flatten(),
                     dense("dense", 64), dense("dense_1", 10, "softmax")});
}

std::string refusal(const json& model) {
  try {
    import_keras_json(model.dump(), "m.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

using test::AddressSpaceCap;

}  // namespace

class TestKerasImport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  // tf.keras 2.x's to_json of the seed's CNN is the reference model itself, Keras's 121,930
  // parameters: conv 3*3*1*32+32 = 320, conv 3*3*32*64+64 = 18,496, dense 5*5*64*64+64 =
  // 102,464, dense 64*10+10 = 650.
  void keras2_reference_cnn_is_the_reference() {
    const KerasImport k = import_keras_json(reference_cnn().dump(), "ref.json");
    QVERIFY(k.model.is_reference());
    QCOMPARE(k.model.param_count(), std::size_t(320 + 18496 + 102464 + 650));
    QCOMPARE(k.name, std::string("sequential"));
    QVERIFY2(QString::fromStdString(k.format).contains("2.13.1"), k.format.c_str());
    bool softmax_note = false, weights_note = false;
    for (const auto& n : k.notes) {
      softmax_note |= n.find("softmax") != std::string::npos;
      weights_note |= n.find("weights") != std::string::npos;
    }
    QVERIFY(softmax_note && weights_note);
  }

  // Where the input shape is: an InputLayer's batch_input_shape (tf.keras 2.13+), a rank-3
  // input without a channel axis, Keras <= 2.2's bare layer list, Keras 3's batch_shape.
  void input_shape_wherever_it_is() {
    json mlp = sequential({input_layer({nullptr, 28, 28}), flatten(), dense("d1", 256), dense("d2", 128), dense("d3", 64),
                           dense("d4", 10, "softmax")});
    KerasImport k = import_keras_json(mlp.dump(), "mlp.json");
    QCOMPARE(k.model.name(), std::string("mlp"));   // the Flatten before a Dense is implicit
    // 784*256+256 + 256*128+128 + 128*64+64 + 64*10+10
    QCOMPARE(k.model.param_count(), std::size_t(200960 + 32896 + 8256 + 650));

    json bare = reference_cnn();
    bare["config"] = bare["config"]["layers"];   // Keras <= 2.2: "config" is the list itself
    QVERIFY(import_keras_json(bare.dump(), "old.json").model.is_reference());

    json k3 = reference_cnn();
    k3["config"]["layers"][0]["config"].erase("batch_input_shape");
    k3["config"]["layers"].insert(k3["config"]["layers"].begin(),
                                  json{{"module", "keras.layers"}, {"class_name", "InputLayer"},
                                       {"config", {{"batch_shape", {nullptr, 28, 28, 1}}, {"dtype", "float32"},
                                                   {"name", "input_layer"}}},
                                       {"registered_name", nullptr}});
    k3["module"] = "keras";
    QVERIFY(import_keras_json(k3.dump(), "k3.json").model.is_reference());

    json none = reference_cnn();
    none["config"]["layers"][0]["config"].erase("batch_input_shape");
    QVERIFY2(refusal(none).find("no input shape") != std::string::npos, refusal(none).c_str());
  }

  // Activations as separate layers fold into the layer before; Keras 3's DTypePolicy objects
  // and activation objects read as their names; Rescaling(1/255) at the input is the data's.
  void separate_activations_dtype_policies_and_rescaling() {
    json c = conv("conv2d", 8, 5, "linear", "same");
    c["config"]["dtype"] = {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", "float32"}}}};
    json relu = k2("Activation", {{"name", "act"}, {"activation", "relu"}});
    json d = dense("dense", 10, "linear");
    d["config"]["activation"] = {{"module", "keras.activations"}, {"class_name", "function"}, {"config", "linear"}};
    json soft = k2("Activation", {{"name", "softmax"}, {"activation", "softmax"}});
    json rescale = k2("Rescaling", {{"name", "rescaling"}, {"scale", 1.0 / 255}, {"offset", 0.0},
                                    {"batch_input_shape", {nullptr, 28, 28, 1}}});
    json drop = k2("Dropout", {{"name", "dropout"}, {"rate", 0.25}, {"noise_shape", nullptr}, {"seed", nullptr}});
    json relu_layer = k2("ReLU", {{"name", "re_lu"}, {"max_value", nullptr}, {"negative_slope", 0.0}, {"threshold", 0.0}});
    json m = sequential({rescale, c, relu, pool("pool"), drop, flatten(), dense("hidden", 32, "linear"), relu_layer, d, soft});
    const KerasImport k = import_keras_json(m.dump(), "act.json");
    QCOMPARE(model_text(k.model), std::string("conv8@5s-pool-drop25-dense32-dense10"));
    // 5*5*1*8+8 = 208; 14*14*8*32+32 = 50,208; 32*10+10 = 330
    QCOMPARE(k.model.param_count(), std::size_t(208 + 50208 + 330));
  }

  // Anything the engines cannot train is refused naming model.layers[i], its name and class.
  void refusals_name_the_layer_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("expected");
    const auto with = [](int at, const json& layer) {
      json m = reference_cnn();
      m["config"]["layers"].insert(m["config"]["layers"].begin() + at, layer);
      return QString::fromStdString(m.dump());
    };
    json strided = conv("strided", 16, 3);
    strided["config"]["strides"] = {2, 2};
    QTest::newRow("strides") << with(2, strided) << "model.layers[2] 'strided' (Conv2D)";
    QTest::newRow("leaky relu") << with(1, k2("LeakyReLU", {{"name", "leaky"}, {"alpha", 0.3}}))
                                << "model.layers[1] 'leaky' (LeakyReLU)";
    QTest::newRow("batch norm") << with(1, k2("BatchNormalization", {{"name", "bn"}, {"axis", -1}}))
                                << "model.layers[1] 'bn' (BatchNormalization)";
    QTest::newRow("lambda") << with(3, k2("Lambda", {{"name", "lam"}, {"function", {"4wEAAAAAAAAA", nullptr, nullptr}},
                                                     {"function_type", "lambda"}}))
                            << "never runs";
    QTest::newRow("resizing") << with(1, k2("Resizing", {{"name", "resize"}, {"height", 32}, {"width", 32}}))
                              << "model.layers[1] 'resize' (Resizing)";
    QTest::newRow("lstm") << with(5, k2("LSTM", {{"name", "lstm"}, {"units", 8}})) << "model.layers[5] 'lstm' (LSTM)";
    QTest::newRow("dense on an image") << with(2, dense("pointwise", 8)) << "add Flatten";
    json m = reference_cnn();
    m["config"]["layers"].back()["config"]["activation"] = "sigmoid";
    QTest::newRow("sigmoid output") << QString::fromStdString(m.dump()) << "model.layers[6] 'dense_1' (Dense): a sigmoid";
    json custom = reference_cnn();
    custom["config"]["layers"][4]["registered_name"] = "my_package>MyFlatten";
    QTest::newRow("custom layer") << QString::fromStdString(custom.dump()) << "custom layer (my_package>MyFlatten)";
    json even = reference_cnn();
    even["config"]["layers"][2]["config"]["kernel_size"] = {4, 4};
    QTest::newRow("even kernel") << QString::fromStdString(even.dump()) << "model.layers[2] 'conv2d_1' (Conv2D): a 4x4";
  }
  void refusals_name_the_layer() {
    QFETCH(QString, model);
    QFETCH(QString, expected);
    const std::string why = refusal(json::parse(model.toStdString()));
    QVERIFY2(why.find(expected.toStdString()) != std::string::npos, why.c_str());
    QVERIFY2(why.rfind("m.json: ", 0) == 0, why.c_str());
  }

  // A functional chain reads as its layers; a branch or join is refused naming where.
  void functional_chains_and_branches() {
    const auto node = [](const std::string& from) { return json::array({json::array({json::array({from, 0, 0, json::object()})})}); };
    json layers = json::array();
    json in = k2("InputLayer", {{"name", "input_1"}, {"batch_input_shape", {nullptr, 28, 28, 1}}});
    in["name"] = "input_1";
    in["inbound_nodes"] = json::array();
    layers.push_back(in);
    std::string before = "input_1";
    for (json l : {conv("conv2d", 32, 3), pool("max_pooling2d"), conv("conv2d_1", 64, 3), pool("max_pooling2d_1"), flatten(),
                   dense("dense", 64), dense("dense_1", 10, "softmax")}) {
      l["name"] = l["config"]["name"];
      l["inbound_nodes"] = node(before);
      before = l["name"];
      layers.push_back(l);
    }
    json f = {{"class_name", "Functional"},
              {"config", {{"name", "model"}, {"layers", layers}, {"input_layers", {{"input_1", 0, 0}}},
                          {"output_layers", {{"dense_1", 0, 0}}}}},
              {"keras_version", "2.13.1"}};
    QVERIFY(import_keras_json(f.dump(), "f.json").model.is_reference());
    f["config"]["layers"][3]["inbound_nodes"] = node("max_pooling2d_1");   // conv2d_1 reads a later layer
    QVERIFY(refusal(f).find("model.layers[3] 'conv2d_1' (Conv2D) reads [max_pooling2d_1]") != std::string::npos);
    f["config"]["layers"][3]["inbound_nodes"] = json::array({json::array({json::array({"max_pooling2d", 0, 0, json::object()}),
                                                                          json::array({"conv2d", 0, 0, json::object()})})});
    QVERIFY2(refusal(f).find("branches") != std::string::npos, refusal(f).c_str());
  }

  // The hand-written fixtures of every format (tests/data/keras/README.md): each imports as
  // the layer text and with the parameter count worked out there, or is refused naming its layer.
  void fixtures_data();
  void fixtures();

  // A Keras 3 .keras file: config.json inside a zip, the version from metadata.json.
  void keras3_archive() {
    json cfg = reference_cnn();
    cfg["module"] = "keras";
    const fs::path file = fs::path(tmp_.path().toStdString()) / "m.keras";
    test::write_zip(file, {{"metadata.json", R"({"keras_version": "3.3.3", "date_saved": "2024-05-01@10:00:00"})"},
                           {"config.json", cfg.dump()},
                           {"model.weights.h5", std::string(1000, 'w')}});
    const KerasImport k = import_keras_file(file);
    QVERIFY(k.model.is_reference());
    QCOMPARE(k.format, std::string("Keras 3.3.3 .keras file"));
    QVERIFY(model_from_source(file.string()) == k.model);

    test::write_zip(file, {{"other.json", "{}"}});
    QVERIFY_THROWS_EXCEPTION(ConfigError, import_keras_file(file));
  }

  // A zip bomb: config.json of 300 MB of zeros in ~300 KB. Refused before inflating, under a
  // 256 MB address-space cap; a truncated archive and an HDF5 file are refused too.
  void hostile_archives_are_refused() {
    const fs::path bomb = fs::path(tmp_.path().toStdString()) / "bomb.keras";
    test::write_zip(bomb, {{"metadata.json", R"({"keras_version": "3.3.3"})"}}, "config.json", zip_uint64_t(300) << 20);
    QVERIFY(fs::file_size(bomb) < (std::uintmax_t(2) << 20));
    {
      AddressSpaceCap cap(rlim_t(256) << 20);
      try {
        import_keras_file(bomb);
        QFAIL("a zip bomb was read");
      } catch (const DataError& e) {
        QVERIFY2(std::string(e.what()).find("config.json") != std::string::npos, e.what());
      }
    }
    // Zeros within the size limit but past the ratio: refused while reading too.
    test::write_zip(bomb, {}, "config.json", zip_uint64_t(8) << 20);
    QVERIFY_THROWS_EXCEPTION(DataError, import_keras_file(bomb));

    const std::string bytes = test::read_bytes(bomb);
    QVERIFY_THROWS_EXCEPTION(DataError, ZipArchive(bytes.substr(0, bytes.size() / 2), "half.keras"));
    const fs::path h5 = fs::path(tmp_.path().toStdString()) / "m.h5";
    std::ofstream(h5, std::ios::binary) << std::string("\x89HDF\r\n\x1a\n", 8) << std::string(100, '\0');
    try {
      import_keras_file(h5);
      QFAIL("an HDF5 file was read");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("HDF5") != std::string::npos, e.what());
    }
  }

  // The zip reader's limits: entry count, entry size, ratio; names only compared.
  void zip_limits() {
    const fs::path file = fs::path(tmp_.path().toStdString()) / "many.zip";
    std::vector<std::pair<std::string, std::string>> entries;
    for (int i = 0; i < 20; ++i) entries.push_back({"../../etc/e" + std::to_string(i), "x"});
    test::write_zip(file, entries);
    ZipLimits few;
    few.max_entries = 10;
    QVERIFY_THROWS_EXCEPTION(DataError, ZipArchive(file, few));
    const ZipArchive zip(file);
    QCOMPARE(zip.entries().size(), std::size_t(20));
    QCOMPARE(zip.read("../../etc/e3"), std::string("x"));
    QVERIFY_THROWS_EXCEPTION(DataError, zip.read("missing"));
    ZipLimits small;
    small.max_entry_bytes = 4;
    test::write_zip(file, {{"big", std::string(100, 'a')}});
    QVERIFY_THROWS_EXCEPTION(DataError, ZipArchive(file, small).read("big"));
  }

  // Deep or huge JSON is refused as data, not a crash.
  void hostile_json_is_refused() {
    QVERIFY_THROWS_EXCEPTION(DataError, import_keras_json(std::string(100000, '[') + std::string(100000, ']'), "deep.json"));
    QVERIFY_THROWS_EXCEPTION(DataError, import_keras_json("{\"class_name\": ", "cut.json"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, import_keras_json("[1, 2]", "list.json"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, import_keras_json(R"({"class_name": "Sequential", "config": 3})", "odd.json"));
    // A TF.js file whose topology holds no model, or not an object.
    QVERIFY_THROWS_EXCEPTION(ConfigError, import_keras_json(R"({"modelTopology": {}})", "empty.json"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, import_keras_json(R"({"modelTopology": {"model_config": 5}})", "five.json"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, import_keras_json(R"({"class_name": "Functional", "config": {"layers":
        [{"class_name": "InputLayer", "inbound_nodes": 7, "config": {"batch_shape": [null, 4, 4, 1]}}]}})", "f.json"));
  }

  void names_model_file_tells_files_from_texts() {
    for (const char* file : {"m.json", "dir/model", "./m.keras", "old.h5"}) QVERIFY2(names_model_file(file), file);
    for (const char* text : {"mlp", "conv32-pool-dense10", "drop12.5-dense10", "32x32x3:conv8-gap-dense10", "dense:4096"})
      QVERIFY2(!names_model_file(text), text);
    QVERIFY_THROWS_EXCEPTION(ConfigError, model_from_source("missing.json"));
  }

 private:
  QTemporaryDir tmp_;
};

// Each fixture: its file, then the layer text it reads as and Keras's trainable parameter
// count (README.md shows the arithmetic), or "refused:" and what the message must contain.
void TestKerasImport::fixtures_data() {
  QTest::addColumn<QString>("file");
  QTest::addColumn<QString>("text");
  QTest::addColumn<qulonglong>("params");
  const fs::path table = kFixtures / "expected.tsv";
  if (!fs::exists(table)) QSKIP("no tests/data/keras/expected.tsv");
  std::ifstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto a = line.find('\t'), b = line.find('\t', a + 1);
    QVERIFY2(a != std::string::npos && b != std::string::npos, line.c_str());
    const std::string file = line.substr(0, a);
    QTest::newRow(file.c_str()) << QString::fromStdString(file) << QString::fromStdString(line.substr(a + 1, b - a - 1))
                                << qulonglong(std::stoull(line.substr(b + 1)));
  }
}

void TestKerasImport::fixtures() {
  QFETCH(QString, file);
  QFETCH(QString, text);
  QFETCH(qulonglong, params);
  const fs::path path = kFixtures / file.toStdString();
  if (text.startsWith("refused:")) {
    try {
      import_keras_file(path);
      QFAIL("accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(text.mid(8).trimmed().toStdString()) != std::string::npos, e.what());
    }
    return;
  }
  const KerasImport k = import_keras_file(path);
  QCOMPARE(QString::fromStdString(model_text(k.model)), QString::fromStdString(model_text(model_from_text(text.toStdString()))));
  QCOMPARE(qulonglong(k.model.param_count()), params);
}

QTEST_GUILESS_MAIN(TestKerasImport)
#include "test_keras_import.moc"
