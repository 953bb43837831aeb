// Training curves as one self-contained SVG file (`tfm plot`): a panel a quantity — loss,
// perplexity (log scale), accuracy, validation BLEU, learning rate, gradient norm, tokens/s —
// against the update, one colour a run (several runs overlay, to compare), training solid and
// validation dashed with a dot at each validation. Readable in any browser, without TensorBoard.
//
// Each panel is a <g class="panel"> whose data-x / data-y attributes give its axes' ranges,
// data-scale linear or log, and data-box the plot area in pixels (left top width height); each
// curve is a <polyline class="series"> with data-run and data-tag (TensorBoard's tag, as
// train/loss), its points in that box. So a program can read back what is drawn.
#pragma once

#include <string>
#include <vector>

#include "tfm/train/train_history.h"

namespace tfm {

struct CurveRun {
  std::string name;  // shown in the legend
  TrainHistory history;
};

std::string training_curves_svg(const std::vector<CurveRun>& runs, const std::string& title);

}  // namespace tfm
