// What the classroom view says about one training step, worked out from the trainer's
// StepDetail: the global batch and each replica's share, what each replica computed on its
// own (loss, right answers, gradient norm, phase times), the all-reduce, and the update that
// arrived everywhere (parameter digests, identical or not). Plain data: the widget, the PNG
// export and the tests read the same texts.
#pragma once
#include <QString>

#include <cstdint>
#include <vector>

#include "records/run_record.h"
#include "trainer/train_observer.h"

namespace mb {

struct ReplicaPicture {
  QString name;              // "Replica 0"
  QString device;            // "CPU core", "GPU 1", "CPU core · process 1"
  int64_t share_begin = 0;   // position in the step's batch
  int64_t share_count = 0;
  QString share_text;        // "images 1–64 (64)"
  QString loss_text;         // "loss 0.4321"
  QString correct_text;      // "51 of 64 right"
  QString grad_text;         // "gradient norm 1.234"
  QString compute_text;      // "forward 2.1 ms · backward 4.3 ms"
  QString update_text;       // "update 0.30 ms"
  QString digest;            // the parameters' digest after the update, as the trainer wrote it
};

struct StepPicture {
  bool empty = true;                 // no detailed step yet
  QString heading;                   // "Epoch 1 of 2 · step 37 of 469"
  QString run_text;                  // "cpu:2 · fashion-mnist · 2,048 training images"
  QString batch_text;                // "① The global batch: 128 images, split over 2 replicas"
  int64_t global_batch = 0;
  std::vector<int32_t> samples;      // training-set indices of the batch's first images
  std::vector<ReplicaPicture> replicas;
  QString allreduce_text;            // the exchange: bytes and time (and the remedy's part in it)
  bool accumulating = false;         // --accumulate K: the step is one micro-batch of K
  bool compressed = false;           // bf16/fp16 or PowerSGD: fewer bytes than the gradient travel
  bool identical = false;            // every replica's digest equal (and known)
  QString verdict_text;              // "Identical: …" or "Not identical: …"
  QString paced_text;                // "teaching pace: one step every 1 s", or empty
};

// `run`: the configuration of the run the step belongs to (devices, data set, pace).
StepPicture describe_step(const StepProgress& progress, const RunConfig& run);

// The device of replica `r` in words, from the run's device list and process layout.
QString replica_device(const RunConfig& run, int replica);

// The class names of the data set's labels ("Sneaker" for Fashion-MNIST), else the digit.
QString label_name(const std::string& dataset, int label);

// The words of the view and their explanations (tooltips): every term a class may not know.
struct GlossaryEntry {
  QString term;
  QString explanation;
};
const std::vector<GlossaryEntry>& step_glossary();
QString explain(const QString& term);   // empty when the term is not in the glossary

}  // namespace mb
