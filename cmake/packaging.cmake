# Install rules and the Debian package: `scripts/build-deb.sh` (cpack -G DEB) builds
# mirrorbench_<version>_amd64.deb with both programs, the desktop entry and the icon. Depends
# comes from the binaries (dpkg-shlibdeps); the default data set is only recommended, since
# --data takes any MNIST-layout folder. The package is CPU-only: cuDNN and NCCL are not Debian
# packages, so a CUDA build's dependencies could not be expressed (see README).
include(GNUInstallDirs)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mirrorbench)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "mirrorbench")
set(CPACK_PACKAGE_CONTACT "mirrorbench maintainers <maintainers@users.noreply.a-seed-793743ab.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "workbench for data-parallel (mirrored) CNN training")
set(CPACK_PACKAGE_DESCRIPTION
    "Trains a small CNN on one device and on several (CPU replicas, GPUs) with the semantics of\n"
    "tf.distribute.MirroredStrategy and compares epoch time and accuracy in live charts.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)              # mirrorbench_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)               # Depends from the binaries' libraries
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin")     # mpirun, for runs across processes
set(CPACK_STRIP_FILES ON)
include(CPack)
