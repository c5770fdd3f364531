// The window on a laptop or projector screen: run once per screen size (CTest gives the
// offscreen platform a screen of 1366x768, 1440x900 or 1600x1000, tests/data/screens/), with
// fresh settings (no geometry restored) and DejaVu Sans, the font Debian's Qt resolves to.
// The window fits the screen; no part of it scrolls sideways (tables of runs aside, which hold
// data); the Run, Compare, Reference experiment, Sweep and Stop buttons are in view even when
// the setup fields scroll; and on every tab every button's and label's text fits its width.
#include <QAbstractItemView>
#include <QAbstractButton>
#include <QApplication>
#include <QFontInfo>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "app/main_window.h"
#include "setup/run_setup_panel.h"

using namespace mb;

namespace {

bool shown(const QWidget* w) { return w->isVisibleTo(w->window()) && w->isVisible(); }

// Its name in a failure message: object name, class, and text.
QString describe(const QWidget* w, const QString& text) {
  return QStringLiteral("%1 %2 '%3' (%4 px wide)")
      .arg(QString::fromLatin1(w->metaObject()->className()), w->objectName(), text)
      .arg(w->width());
}

// Texts that do not fit where they are shown.
QStringList cut_texts(const QWidget* root) {
  QStringList cut;
  for (const QAbstractButton* b : root->findChildren<QAbstractButton*>()) {
    if (!shown(b) || b->text().isEmpty() || b->visibleRegion().isEmpty()) continue;
    // A tab bar's buttons and the like are drawn by their parent; a button's own hint holds
    // its text, icon and the style's margins.
    if (b->sizeHint().width() > b->width()) cut << describe(b, b->text());
  }
  for (const QLabel* l : root->findChildren<QLabel*>()) {
    if (!shown(l) || l->text().isEmpty() || l->visibleRegion().isEmpty()) continue;
    if (l->sizePolicy().horizontalPolicy() == QSizePolicy::Ignored) continue;   // elides on purpose (status)
    const bool fits = l->wordWrap() ? l->heightForWidth(l->width()) <= l->height() + 1
                                    : l->sizeHint().width() <= l->width() + 1;
    if (!fits) cut << describe(l, l->text().left(60));
  }
  return cut;
}

QStringList sideways_scrolling(const QWidget* root) {
  QStringList out;
  for (const QAbstractScrollArea* a : root->findChildren<QAbstractScrollArea*>()) {
    if (qobject_cast<const QAbstractItemView*>(a) || !shown(a)) continue;
    if (a->horizontalScrollBar()->isVisible()) out << describe(a, QString());
  }
  return out;
}

}  // namespace

class TestWindowFits : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(home_.isValid());
    qputenv("MIRRORBENCH_HOME", home_.path().toUtf8());   // fresh settings: no geometry to restore
    QCOMPARE(QFontInfo(QApplication::font()).family(), QString("DejaVu Sans"));
  }

  void the_window_fits_its_screen() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QRect screen = w.screen()->availableGeometry();
    qInfo("screen %dx%d, window %dx%d", screen.width(), screen.height(), w.frameGeometry().width(),
          w.frameGeometry().height());
    QVERIFY(screen.width() >= 1366 && screen.height() >= 768);   // one of the screens of tests/data/screens
    QVERIFY2(screen.contains(w.frameGeometry()), "the window is larger than the screen");
    // The default size follows the screen: at most 1440x900, the whole screen where it is smaller.
    QVERIFY(w.width() >= std::min(1440, screen.width()) - 40 && w.width() <= 1440);

    for (const char* name : {"run_button", "compare_button", "reference_button", "sweep_button", "stop_button"}) {
      auto* b = w.findChild<QPushButton*>(name);
      QVERIFY2(b && shown(b), name);
      const QRect in_window(b->mapTo(&w, QPoint(0, 0)), b->size());
      QVERIFY2(w.rect().contains(in_window), qPrintable(QString("%1 lies outside the window").arg(name)));
      QVERIFY2(b->visibleRegion().boundingRect().size() == b->size(), qPrintable(QString("%1 is hidden in part").arg(name)));
    }
    auto* setup = w.findChild<QScrollArea*>("setup_scroll");
    QVERIFY(setup);
    QVERIFY2(w.setup_panel()->minimumSizeHint().width() <= setup->viewport()->width(),
             "the setup fields are wider than their column");

    QTabWidget* tabs = w.view_tabs();
    for (int i = 0; i < tabs->count(); ++i) {
      tabs->setCurrentIndex(i);
      QTest::qWait(50);   // layouts settle
      const QStringList cut = cut_texts(&w);
      QVERIFY2(cut.isEmpty(), qPrintable(QString("tab '%1': %2").arg(tabs->tabText(i), cut.join("; "))));
      const QStringList sideways = sideways_scrolling(&w);
      QVERIFY2(sideways.isEmpty(), qPrintable(QString("tab '%1' scrolls sideways: %2").arg(tabs->tabText(i), sideways.join("; "))));
    }
  }

 private:
  QTemporaryDir home_;
};

QTEST_MAIN(TestWindowFits)
#include "test_window_fits.moc"
