// A folder of images in class sub-folders, the layout Keras's image_dataset_from_directory reads:
//   DIR/train/<class>/*.png|*.jpg|*.jpeg   the training set
//   DIR/test/<class>/...                   the validation set
// Classes are the training sub-folders' names in sorted order (as Keras sorts them), label 0
// first; the test folder may lack a class but not add one. Files are read in sorted order;
// other files (and hidden ones) are skipped, as Keras skips them. Every image must have the
// first training image's size; its channels are the first image's too (grey: 1, colour: 3),
// and images of the other kind are converted as data/image_decode.h says. This version decodes
// every image when the data is loaded and keeps them resident, as the other formats are kept.
// Refusals are DataErrors naming the file or folder.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mb {

// The most bytes one image file may have: a 1024 x 1024 colour image in PNG is at most ~3 MB
// plus its chunks; a file larger than this is not an image a model here could read.
constexpr uint64_t kMaxImageFileBytes = uint64_t(64) << 20;

// Whether `dir` has a train/ or a test/ sub-folder, or class sub-folders of images without them
// (then its reader names what else is wrong).
bool is_image_folder(const std::filesystem::path& dir);

// The files of both splits with their labels, and the class names, without reading any image.
struct ImageFolderListing {
  struct File {
    std::filesystem::path path;
    uint8_t label = 0;
  };
  std::vector<std::string> classes;
  std::vector<File> train, test;
};
ImageFolderListing list_image_folder(const std::filesystem::path& dir);

// What the data summary shows before loading: the training images' shape from the first one's
// header, and the class and image counts from the listing.
struct ImageFolderSummary {
  ImageShape shape;
  int classes = 0;
  int64_t train_images = 0, test_images = 0;
};
ImageFolderSummary summarise_image_folder(const std::filesystem::path& dir);

// Every image decoded.
DataSplit load_image_folder(const std::filesystem::path& dir);

}  // namespace mb
