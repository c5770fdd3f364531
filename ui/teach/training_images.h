// The training images of a run's data folder, for the classroom view's thumbnails: loaded on a
// thread of their own (Fashion-MNIST takes a moment) and kept for the next step and run.
#pragma once
#include <QObject>
#include <QString>

#include <memory>
#include <mutex>

class QThread;

namespace mb {

struct Dataset;

class TrainingImages : public QObject {
  Q_OBJECT
 public:
  explicit TrainingImages(QObject* parent = nullptr);
  ~TrainingImages() override;   // waits for a load in progress

  // The images of `dir` (empty: the default data set): ready() once loaded; nothing when they
  // are loaded already. A folder that cannot be read leaves images() null (grey tiles).
  void request(const QString& dir);
  const Dataset* images() const { return images_.get(); }
  QString folder() const { return folder_; }
  bool loading() const { return loader_ != nullptr; }
  // For callers (and tests) that already hold the images of `dir`.
  void set_images(const QString& dir, std::shared_ptr<const Dataset> images);

 signals:
  void ready();

 private:
  void start_loading(const QString& dir);
  void on_loaded();

  QString folder_;                       // the folder images_ belong to (or is being loaded)
  std::shared_ptr<const Dataset> images_;
  QThread* loader_ = nullptr;
  QString loading_, pending_;
  std::mutex mutex_;                     // guards loaded_ between the loader and this thread
  std::shared_ptr<const Dataset> loaded_;
  QString load_error_;
};

}  // namespace mb
