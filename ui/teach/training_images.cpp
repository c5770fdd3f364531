// Background loading of a data folder's training images (see training_images.h).
#include "teach/training_images.h"

#include <QThread>

#include <spdlog/spdlog.h>

#include "data/data_source.h"
#include "data/synthetic.h"
#include "data/dataset.h"

namespace mb {

namespace {
QString resolved(const QString& dir) {
  return dir.isEmpty() ? QString::fromStdString(default_data_dir().string()) : dir;
}
}  // namespace

TrainingImages::TrainingImages(QObject* parent) : QObject(parent) {}

TrainingImages::~TrainingImages() {
  if (!loader_) return;
  loader_->wait();   // its finished signal will find no receiver: delete it here
  delete loader_;
}

void TrainingImages::request(const QString& dir) {
  const QString folder = resolved(dir);
  if (loader_) {   // one load at a time; the latest request follows
    if (folder != loading_) pending_ = folder;
    return;
  }
  if (folder == folder_ && images_) return;
  start_loading(folder);
}

void TrainingImages::set_images(const QString& dir, std::shared_ptr<const Dataset> images) {
  folder_ = resolved(dir);
  images_ = std::move(images);
  emit ready();
}

void TrainingImages::start_loading(const QString& folder) {
  loading_ = folder;
  const std::string path = folder.toStdString();
  loader_ = QThread::create([this, path] {
    std::shared_ptr<const Dataset> train;
    QString error;
    try {
      DataSplit split = load_data_source(path);
      train = std::make_shared<const Dataset>(std::move(split.train));
    } catch (const std::exception& e) {   // the step view then draws grey tiles
      error = QString::fromStdString(e.what());
    }
    std::lock_guard lock(mutex_);
    loaded_ = std::move(train);
    load_error_ = error;
  });
  connect(loader_, &QThread::finished, this, &TrainingImages::on_loaded);
  loader_->start(QThread::LowPriority);
}

void TrainingImages::on_loaded() {
  loader_->deleteLater();
  loader_ = nullptr;
  {
    std::lock_guard lock(mutex_);
    folder_ = loading_;
    images_ = std::move(loaded_);
    if (!load_error_.isEmpty())
      spdlog::warn("Classroom view: no thumbnails ({})", load_error_.toStdString());
    load_error_.clear();
  }
  loading_.clear();
  if (!pending_.isEmpty()) {
    const QString next = pending_;
    pending_.clear();
    if (next != folder_ || !images_) start_loading(next);
  }
  emit ready();
}

}  // namespace mb
