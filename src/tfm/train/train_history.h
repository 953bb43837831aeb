// What a DIR/train.log says, read back: the log windows' and validations' values at each update,
// as `tfm plot` draws them. Lines a run logged past its last checkpoint before it was killed are
// dropped where the next run says "resuming from update N" (it makes those updates again).
#pragma once

#include <string>
#include <vector>

#include "tfm/trainer.h"

namespace tfm {

struct TrainHistory {
  std::vector<TrainStatsEvent> stats;             // by update; the values as printed
  std::vector<TrainValidationEvent> validations;  // bleu < 0 where none was logged
};

// Throws naming the file when it cannot be read or holds no log window and no validation
// (lines of other kinds, or of a format it does not know, are passed over).
TrainHistory read_train_log(const std::string& path);

}  // namespace tfm
