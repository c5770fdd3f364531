// The classroom view of one step (ui/teach) on the offscreen platform: a StepDetail with known
// values shows exactly those shares, losses, gradient norms and digests; equal digests are
// called identical and unequal or missing ones are not; the picture draws the step's real
// images and explains its words; the PNG for slides; the teaching-pace switch; and real
// detailed steps arriving from a run in the window and in scripted mode.
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <memory>

#include "app/main_window.h"
#include "app/script_options.h"
#include "experiment/baseline.h"
#include "history/history_model.h"
#include "setup/run_setup_panel.h"
#include "teach/step_painter.h"
#include "teach/step_picture.h"
#include "teach/step_view.h"
#include "teach/training_images.h"
#include "gui_process.h"
#include "test_support.h"
#include "util/system_info.h"

using namespace mb;

namespace {

constexpr int kTrain = 512, kVal = 128;
constexpr int kRunTimeoutMs = 120000;

RunConfig two_replica_run() {
  RunConfig c;
  c.devices = parse_devices("cpu:2");
  c.replicas = 2;
  c.replicas_per_process = 2;
  c.dataset = "fashion-mnist";
  c.train_size = 2048;
  return c;
}

// Step 37 of 64 with a global batch of 5 images: replica 0 gets 3, replica 1 gets 2.
StepProgress known_step(const std::string& digest0 = "00112233aabbccdd", const std::string& digest1 = "00112233aabbccdd") {
  StepProgress p;
  p.epoch = 1, p.epochs = 2, p.step = 37, p.steps = 64;
  p.has_detail = true;
  StepDetail& d = p.detail;
  d.global_batch = 5;
  d.samples = {40, 7, 311, 2, 95};
  d.allreduce_bytes = 121930.0 * 4;
  ReplicaStepDetail a;
  a.share_begin = 0, a.share_count = 3, a.loss = 0.25, a.correct = 2, a.grad_norm = 1.25, a.digest = digest0;
  a.phases[phase::Forward] = 0.0021, a.phases[phase::Backward] = 0.0043, a.phases[phase::AllReduce] = 0.0005, a.phases[phase::Optimizer] = 0.0003;
  ReplicaStepDetail b;
  b.share_begin = 3, b.share_count = 2, b.loss = 1.5, b.correct = 1, b.grad_norm = 0.5, b.digest = digest1;
  b.phases[phase::Forward] = 0.0019, b.phases[phase::Backward] = 0.0040, b.phases[phase::AllReduce] = 0.0004, b.phases[phase::Wait] = 0.0012;
  d.replicas = {a, b};
  return p;
}

int dark_pixels(const QImage& image) {
  int dark = 0;
  for (int y = 0; y < image.height(); y += 4)
    for (int x = 0; x < image.width(); x += 4) dark += qGray(image.pixel(x, y)) < 128;
  return dark;
}

}  // namespace

class TestStepView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();

  void the_picture_holds_the_steps_numbers();
  void digests_decide_identical_data();
  void digests_decide_identical();
  void unknown_and_empty_values_are_said_plainly();
  void remedies_show_in_the_exchange();
  void the_view_draws_the_numbers_and_explains_them();
  void thumbnails_are_the_steps_images();
  void export_png_has_the_requested_size();
  void teaching_pace_switch_and_its_advice();
  void a_paced_run_shows_every_step();
  void scripted_run_exports_the_step();

 private:
  QTemporaryDir home_;
  QTemporaryDir data_;
  QString data_dir_;
};

void TestStepView::initTestCase() {
  QVERIFY(home_.isValid() && data_.isValid());
  qputenv("MIRRORBENCH_HOME", home_.path().toUtf8());
  data_dir_ = QDir::cleanPath(data_.path() + "/tiny-idx");
  test::write_synthetic_idx_dir(data_dir_.toStdString(), kTrain, kVal);
}

void TestStepView::the_picture_holds_the_steps_numbers() {
  const StepPicture pic = describe_step(known_step(), two_replica_run());
  QVERIFY(!pic.empty);
  QCOMPARE(pic.heading, QString("Epoch 1 of 2 · step 37 of 64"));
  QVERIFY(pic.batch_text.contains("5 images, split over 2 replicas"));
  QCOMPARE(pic.global_batch, int64_t(5));
  QCOMPARE(pic.samples, (std::vector<int32_t>{40, 7, 311, 2, 95}));
  QCOMPARE(int(pic.replicas.size()), 2);
  const ReplicaPicture& a = pic.replicas[0];
  const ReplicaPicture& b = pic.replicas[1];
  QCOMPARE(a.name, QString("Replica 0"));
  QCOMPARE(a.device, QString("CPU core"));
  QCOMPARE(a.share_begin, int64_t(0));
  QCOMPARE(a.share_count, int64_t(3));
  QCOMPARE(a.share_text, QString("images 1–3 (3)"));
  QCOMPARE(b.share_text, QString("images 4–5 (2)"));
  QCOMPARE(a.loss_text, QString("loss 0.2500"));
  QCOMPARE(b.loss_text, QString("loss 1.5000"));
  QCOMPARE(a.correct_text, QString("2 of 3 right"));
  QCOMPARE(b.correct_text, QString("1 of 2 right"));
  QCOMPARE(a.grad_text, QString("gradient norm 1.25"));
  QCOMPARE(b.grad_text, QString("gradient norm 0.5"));
  QCOMPARE(a.compute_text, QString("forward 2.10 ms · backward 4.30 ms"));
  QCOMPARE(a.update_text, QString("Adam update 0.30 ms"));
  QCOMPARE(a.digest, QString("00112233aabbccdd"));
  QCOMPARE(b.digest, QString("00112233aabbccdd"));
  // The all-reduce: the gradient's bytes, the longest exchange, the wait for the slowest.
  QVERIFY2(pic.allreduce_text.contains("487,720 bytes (0.49 MB) in 0.50 ms"), qPrintable(pic.allreduce_text));
  QVERIFY2(pic.allreduce_text.contains("waiting 1.20 ms"), qPrintable(pic.allreduce_text));
  QVERIFY(pic.identical);
  QVERIFY(pic.verdict_text.startsWith("Identical"));
  QVERIFY(pic.verdict_text.contains("00112233aabbccdd"));
  QVERIFY(pic.paced_text.isEmpty());
  QVERIFY(!pic.batch_text.contains("balanced"));
  // Balanced shares: the split says so, with the shares.
  RunConfig balanced = two_replica_run();
  balanced.scenario.balance = true;
  const StepPicture uneven = describe_step(known_step(), balanced);
  QVERIFY2(uneven.batch_text.contains("by their speed (balanced shares: 3 / 2)"), qPrintable(uneven.batch_text));
  // A step without detail draws nothing but the invitation.
  StepProgress plain = known_step();
  plain.has_detail = false;
  QVERIFY(describe_step(plain, two_replica_run()).empty);
}

void TestStepView::digests_decide_identical_data() {
  QTest::addColumn<QString>("d0");
  QTest::addColumn<QString>("d1");
  QTest::addColumn<bool>("identical");
  QTest::addColumn<QString>("says");
  QTest::newRow("equal") << "00112233aabbccdd" << "00112233aabbccdd" << true << "Identical: both replicas";
  QTest::newRow("one bit apart") << "00112233aabbccdd" << "00112233aabbccdc" << false << "Not identical: Replica 1 has";
  QTest::newRow("unknown") << "00112233aabbccdd" << "" << false << "Not identical: Replica 1";
  QTest::newRow("none known") << "" << "" << false << "Not identical: Replica 0, Replica 1 have";
}

void TestStepView::digests_decide_identical() {
  QFETCH(QString, d0);
  QFETCH(QString, d1);
  QFETCH(bool, identical);
  QFETCH(QString, says);
  const StepPicture pic = describe_step(known_step(d0.toStdString(), d1.toStdString()), two_replica_run());
  QCOMPARE(pic.identical, identical);
  QVERIFY2(pic.verdict_text.startsWith(says), qPrintable(pic.verdict_text));
  QCOMPARE(pic.verdict_text.contains("Identical"), identical);
  // The picture says it in the banner too (the ✔ or the ✘).
  StepPanel panel;
  panel.run_started(two_replica_run());
  panel.show_step(known_step(d0.toStdString(), d1.toStdString()));
  panel.resize(1600, 900);
  panel.view()->resize(1600, 860);
  panel.view()->grab();
  const QString banner = (identical ? QStringLiteral("\u2714 ") : QStringLiteral("\u2718 ")) + pic.verdict_text;
  QVERIFY2(panel.view()->canvas().texts.contains(banner), qPrintable(panel.view()->canvas().texts.join(" | ")));
}

void TestStepView::unknown_and_empty_values_are_said_plainly() {
  StepProgress p = known_step();
  p.detail.replicas[1].grad_norm = std::nan("");   // an engine that cannot tell (CUDA)
  p.detail.replicas[1].phases = PhaseTimes{};       // nor time the phases of one step
  p.detail.replicas[0].share_count = 0;             // the last, partial batch left it nothing
  RunConfig run = two_replica_run();
  run.devices = parse_devices("cuda:0,cuda:1");
  run.step_delay_s = 1;
  const StepPicture pic = describe_step(p, run);
  QCOMPARE(pic.replicas[1].grad_text, QString("gradient norm: not measured here"));
  QCOMPARE(pic.replicas[1].compute_text, QString("times: not measured per step here"));
  QCOMPARE(pic.replicas[0].share_text, QString("no images this step"));
  QCOMPARE(pic.replicas[0].device, QString("GPU 0"));
  QCOMPARE(pic.replicas[1].device, QString("GPU 1"));
  QVERIFY(pic.paced_text.contains("teaching pace"));
  // One replica: no exchange to speak of.
  StepProgress one = known_step();
  one.detail.replicas.resize(1);
  QVERIFY(describe_step(one, two_replica_run()).allreduce_text.contains("only one replica"));
  // Across processes the process is named.
  RunConfig procs = two_replica_run();
  procs.processes = 2;
  procs.replicas_per_process = 1;
  procs.devices = parse_devices("cpu:1");
  QCOMPARE(replica_device(procs, 1), QString("CPU core · process 1"));
}

// The communication remedies (issue 29) in the step's words: the accumulation window worked out
// from the step number as the trainer cuts it, and what travels under compression.
void TestStepView::remedies_show_in_the_exchange() {
  const StepPicture plain = describe_step(known_step(), two_replica_run());
  QVERIFY(!plain.accumulating && !plain.compressed);
  QVERIFY(!plain.batch_text.contains("micro-batch") && !plain.allreduce_text.contains("bf16"));

  RunConfig run = two_replica_run();
  run.scenario.accumulate = 4;
  StepProgress p = known_step();   // step 37 of 64: the first micro-batch of the window 37-40
  const StepPicture first = describe_step(p, run);
  QVERIFY(first.accumulating);
  QVERIFY2(first.batch_text.contains("micro-batch 1 of 4"), qPrintable(first.batch_text));
  QVERIFY2(first.allreduce_text.startsWith("No exchange yet") && first.allreduce_text.contains("after micro-batch 4"),
           qPrintable(first.allreduce_text));
  QCOMPARE(first.replicas[0].update_text, QString("no update yet (accumulating)"));
  p.step = 40;
  const StepPicture last = describe_step(p, run);
  QVERIFY(last.batch_text.contains("micro-batch 4 of 4"));
  QVERIFY2(last.allreduce_text.contains("each summed over 4 micro-batches"), qPrintable(last.allreduce_text));
  QVERIFY(last.replicas[0].update_text.startsWith("Adam update"));
  p.step = 62, p.steps = 62;   // the epoch's last window holds steps 61-62 only
  const StepPicture partial = describe_step(p, run);
  QVERIFY2(partial.batch_text.contains("micro-batch 2 of 2"), qPrintable(partial.batch_text));
  QVERIFY(partial.allreduce_text.startsWith("All-reduce"));

  RunConfig bf16 = two_replica_run();
  bf16.scenario.allreduce_dtype = WireDtype::Bf16;
  bf16.scenario.bucket_mb = 1;
  const StepPicture wire = describe_step(known_step(), bf16);
  QVERIFY(wire.compressed && !wire.accumulating);
  QVERIFY2(wire.allreduce_text.contains("as bf16: 2 bytes per number instead of 4, summed in FP32") &&
               wire.allreduce_text.contains("in buckets of 1 MB"),
           qPrintable(wire.allreduce_text));

  RunConfig psgd = two_replica_run();
  psgd.scenario.powersgd_rank = 4;
  const StepPicture factors = describe_step(known_step(), psgd);
  QVERIFY(factors.compressed);
  QVERIFY2(factors.allreduce_text.contains("as rank-4 PowerSGD factors instead of the whole 0.49 MB gradient"),
           qPrintable(factors.allreduce_text));
}

void TestStepView::the_view_draws_the_numbers_and_explains_them() {
  StepPanel panel;
  panel.resize(1600, 940);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  panel.view()->grab();
  QVERIFY(panel.view()->canvas().texts.join(" ").contains("One training step, as it happens"));   // before any run

  panel.run_started(two_replica_run());
  panel.show_step(known_step());
  panel.view()->grab();
  const StepCanvas& canvas = panel.view()->canvas();
  const QString drawn = canvas.texts.join(" | ");
  for (const QString& text : {QString("loss 0.2500"), QString("loss 1.5000"), QString("gradient norm 1.25"),
                              QString("gradient norm 0.5"), QString("00112233aabbccdd"), QString("2 of 3 right"),
                              QString("Replica 0: images 1–3 (3)"), QString("Replica 1: images 4–5 (2)"),
                              QString("Epoch 1 of 2 · step 37 of 64")})
    QVERIFY2(drawn.contains(text), qPrintable(text + " not in: " + drawn));
  QCOMPARE(canvas.texts.count(QStringLiteral("00112233aabbccdd")), 2);   // under each replica

  // Every term of the glossary is explained where it is used, and hovering finds it.
  QStringList tips;
  for (const auto& h : canvas.hot) tips << h.tip;
  const QString all_tips = tips.join("\n");
  // (The pace and the remedies are explained only in runs that have them.)
  const QStringList only_when_used{"teaching pace", "gradient accumulation", "compression"};
  for (const GlossaryEntry& e : step_glossary()) {
    if (only_when_used.contains(e.term)) {
      QVERIFY2(!all_tips.contains(e.explanation.toHtmlEscaped()), qPrintable(e.term));
      continue;
    }
    QVERIFY2(all_tips.contains(e.explanation.toHtmlEscaped()), qPrintable(e.term));
  }
  {
    RunConfig remedied = two_replica_run();
    remedied.scenario.accumulate = 4;
    remedied.scenario.powersgd_rank = 4;
    StepPanel with_remedies;
    with_remedies.resize(1280, 720);
    with_remedies.run_started(remedied);
    with_remedies.show_step(known_step());
    with_remedies.view()->grab();
    QString remedy_tips;
    for (const auto& h : with_remedies.view()->canvas().hot) remedy_tips += h.tip;
    QVERIFY(remedy_tips.contains(explain("gradient accumulation").toHtmlEscaped()));
    QVERIFY(remedy_tips.contains(explain("compression").toHtmlEscaped()));
  }
  bool found_allreduce = false;
  for (const auto& h : canvas.hot) {
    if (!h.tip.contains("<b>all-reduce</b>")) continue;
    QCOMPARE(panel.view()->tip_at(h.rect.center().toPoint()), h.tip);
    found_allreduce = true;
  }
  QVERIFY(found_allreduce);
  // Every image of the batch is there to hover, with its number in the training set.
  for (int32_t index : {40, 7, 311, 2, 95})
    QVERIFY2(all_tips.contains(QStringLiteral("Image %1 of the training set").arg(index)), qPrintable(QString::number(index)));
}

void TestStepView::thumbnails_are_the_steps_images() {
  auto split = test::make_synthetic_split(kTrain, kVal);
  auto train = std::make_shared<const Dataset>(split->train);
  StepProgress p = known_step();
  RunConfig run = two_replica_run();
  run.dataset = "synthetic";
  const StepPicture pic = describe_step(p, run);
  StepCanvas canvas;
  QImage image(1600, 900, QImage::Format_ARGB32_Premultiplied);
  {
    QPainter painter(&image);
    paint_step(painter, QRectF(0, 0, 1600, 900), pic, train.get(), "synthetic", {}, &canvas);
  }
  int checked = 0;
  for (const auto& h : canvas.hot) {
    for (int32_t index : p.detail.samples) {
      if (!h.tip.startsWith(QStringLiteral("Image %1 of the training set: digit %2")
                                .arg(index)
                                .arg(int(train->labels[std::size_t(index)]))))
        continue;
      // The cell shows that image, pixel for pixel (the frame aside): sample its inner pixels.
      const uint8_t* pixels = train->image(index);
      for (int row = 6; row < 22; row += 5)
        for (int col = 6; col < 22; col += 5) {
          const QPointF at(h.rect.left() + (col + 0.5) * h.rect.width() / 28, h.rect.top() + (row + 0.5) * h.rect.height() / 28);
          const int shown = qGray(image.pixel(at.toPoint()));
          QVERIFY2(std::abs(shown - int(pixels[row * 28 + col])) <= 2,
                   qPrintable(QStringLiteral("image %1 (%2,%3): %4 vs %5").arg(index).arg(row).arg(col).arg(shown).arg(pixels[row * 28 + col])));
          ++checked;
        }
    }
  }
  QCOMPARE(checked, 5 * 16);

  // Without the images the tiles are grey: nothing pretends to be data.
  StepCanvas bare;
  QImage grey(1600, 900, QImage::Format_ARGB32_Premultiplied);
  {
    QPainter painter(&grey);
    paint_step(painter, QRectF(0, 0, 1600, 900), pic, nullptr, "synthetic", {}, &bare);
  }
  for (const auto& h : bare.hot)
    if (h.tip.startsWith("Image 40 ")) QCOMPARE(grey.pixel(h.rect.center().toPoint()), QColor(0xcf, 0xd8, 0xdc).rgb());

  // Colour images are shown in colour (planar C, H, W): image 40 pure red, image 7 pure blue.
  Dataset colour;
  colour.count = 400, colour.rows = colour.cols = 8, colour.channels = 3;
  colour.pixels.assign(std::size_t(colour.count * colour.pixels_per_image()), 0);
  colour.labels.assign(std::size_t(colour.count), 0);
  std::fill_n(colour.pixels.begin() + 40 * 192, 64, uint8_t(255));             // red plane of image 40
  std::fill_n(colour.pixels.begin() + 7 * 192 + 128, 64, uint8_t(255));        // blue plane of image 7
  StepCanvas coloured;
  QImage rgb(1600, 900, QImage::Format_ARGB32_Premultiplied);
  {
    QPainter painter(&rgb);
    paint_step(painter, QRectF(0, 0, 1600, 900), pic, &colour, "synthetic", {}, &coloured);
  }
  int seen = 0;
  for (const auto& h : coloured.hot) {
    const QColor at = QColor(rgb.pixel(h.rect.center().toPoint()));
    if (h.tip.startsWith("Image 40 ")) {
      QVERIFY(at.red() > 240 && at.green() < 15 && at.blue() < 15);
      ++seen;
    }
    if (h.tip.startsWith("Image 7 ")) {
      QVERIFY(at.blue() > 240 && at.red() < 15 && at.green() < 15);
      ++seen;
    }
  }
  QCOMPARE(seen, 2);
}

void TestStepView::export_png_has_the_requested_size() {
  StepPanel panel;
  panel.run_started(two_replica_run());
  for (QSize size : {QSize(1920, 1080), QSize(1280, 720), QSize(3840, 2160), QSize(800, 800)}) {
    const QImage image = panel.render(size);
    QCOMPARE(image.size(), size);
    QVERIFY(dark_pixels(image) > 20);   // the invitation, before any step
  }
  panel.show_step(known_step());
  QVERIFY(dark_pixels(panel.render(QSize(1920, 1080))) > 500);
  // Training images from the run's folder arrive in the background.
  RunConfig run = two_replica_run();
  run.data_dir = data_dir_.toStdString();
  panel.run_started(run);
  // The first run's folder (the default data set) may still be loading: wait for this one's.
  QTRY_VERIFY_WITH_TIMEOUT(!panel.images()->loading() && panel.images()->folder() == data_dir_, 30000);
  QVERIFY(panel.images()->images() != nullptr);
  QCOMPARE(panel.images()->images()->count, int64_t(kTrain));
}

void TestStepView::teaching_pace_switch_and_its_advice() {
  DeviceInventory inv;
  inv.cpu_cores = 2;
  inv.cpu_name = "Test CPU";
  RunSetupPanel panel(inv);
  auto* pace = panel.findChild<QCheckBox*>("teaching_pace");
  QVERIFY(pace);
  QVERIFY(!pace->isChecked());
  QCOMPARE(panel.config().step_delay_s, 0.0);
  QVERIFY(!pace->toolTip().isEmpty());
  TrainConfig c = panel.config();
  c.limit_train = 2048;
  c.batch = 128;
  c.epochs = 2;
  panel.set_config(c);
  pace->setChecked(true);
  QCOMPARE(panel.config().step_delay_s, 1.0);
  // 2,048 images in batches of 128 for 2 epochs: 32 steps of a second.
  QVERIFY2(panel.advice().join(" ").contains("32 steps, about 0 min 32 s"), qPrintable(panel.advice().join(" ")));
  // A script's own pace is kept while the box stays ticked.
  c.step_delay_s = 0.25;
  panel.set_config(c);
  QVERIFY(pace->isChecked());
  QCOMPARE(panel.config().step_delay_s, 0.25);
  c.step_delay_s = 0;
  panel.set_config(c);
  QVERIFY(!pace->isChecked());
}

void TestStepView::a_paced_run_shows_every_step() {
  MainWindow window;
  window.show();
  TrainConfig c = window.setup_panel()->config();
  c.data_dir = data_dir_.toStdString();
  c.devices = cpu_replicas(cpu_core_count() >= 2 ? 2 : 1);
  c.epochs = 1;
  c.batch = 128;
  c.per_replica_batch = false;
  c.limit_train = kTrain;   // 4 steps
  c.limit_val = kVal;
  c.step_delay_s = 0.05;    // a fast "teaching pace": every step in detail
  QSignalSpy done(&window, &MainWindow::plan_done);
  QSignalSpy steps(window.controller(), &RunController::step_progress);
  QVERIFY(window.start_plan(PlanKind::Single, c));
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(done.front().front().toBool(), true);
  QCOMPARE(window.view_tabs()->currentWidget(), static_cast<QWidget*>(window.step_panel()));
  int detailed = 0;
  for (const auto& args : steps) detailed += args.front().value<StepProgress>().has_detail;
  QCOMPARE(detailed, 4);

  const StepPicture& pic = window.step_panel()->picture();
  QVERIFY(!pic.empty);
  QCOMPARE(pic.heading, QString("Epoch 1 of 1 · step 4 of 4"));
  QCOMPARE(pic.global_batch, int64_t(128));
  QCOMPARE(pic.samples.size(), std::size_t(128));
  const int n = int(c.devices.size());
  QCOMPARE(int(pic.replicas.size()), n);
  int64_t shared = 0;
  for (const auto& r : pic.replicas) {
    QCOMPARE(r.share_begin, shared);
    shared += r.share_count;
    QCOMPARE(r.digest.size(), qsizetype(16));
    QVERIFY2(r.grad_text.startsWith("gradient norm ") && !r.grad_text.contains("not"), qPrintable(r.grad_text));
  }
  QCOMPARE(shared, int64_t(128));
  QVERIFY(pic.identical);   // the MirroredStrategy invariant, on real replicas
  QVERIFY(pic.paced_text.contains("teaching pace"));

  // The run is kept, named for its pace, and never anyone's baseline.
  const RunRecord& r = window.history()->runs().back();
  QCOMPARE(r.config.step_delay_s, 0.05);
  QVERIFY(QString::fromStdString(r.name).contains("teaching pace"));
  QVERIFY(!can_be_baseline(r));
  // And the last step's digest is the epoch's parameter digest: the step view shows the model.
  QCOMPARE(pic.replicas.front().digest, QString::fromStdString(r.epochs.back().param_digest));
}

void TestStepView::scripted_run_exports_the_step() {
  const QString app = test::gui_program();
  if (!QFile::exists(app)) QSKIP("the mirrorbench executable is not built");
  QTemporaryDir out;
  auto run = [&](const QStringList& args) { return test::run_gui(app, args, out.path(), kRunTimeoutMs); };
  const QString png = out.filePath("step.png");
  QCOMPARE(run({"--run", "--pace", "0.02", "--devices", "cpu:1", "--epochs", "1", "--batch", "128", "--data", data_dir_,
                "--limit-train", QString::number(kTrain), "--limit-val", QString::number(kVal), "--export-step", png,
                "--quit"}),
           kExitOk);
  const QImage image(png);
  QCOMPARE(image.size(), QSize(1920, 1080));
  QVERIFY(dark_pixels(image) > 500);
  QCOMPARE(run({"--run", "--pace", "-1", "--quit"}), kExitUsage);
}

QTEST_MAIN(TestStepView)
#include "test_step_view.moc"
