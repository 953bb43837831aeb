// TrainOptions checked and recorded, written once for every front door. The checks name each
// option through a speller, so the library says "max_updates" and `tfm train` says
// "--max-updates" with the same code; the record is DIR/train_config.json.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "tfm/trainer.h"

namespace tfm::runtime {

using tfm::field_name;     // the field names themselves (the C++ and Python API)
using tfm::OptionSpeller;  // error.h: the name a user knows an option by

// Every value in range and every combination allowed, before any file is touched.
void check_train_options(const TrainOptions& o, const OptionSpeller& name = field_name);

// What runs and is recorded: compute_type resolved on this machine, metric filled in.
TrainOptions resolve_train_options(TrainOptions o);

// A directory with a model or checkpoints but no training state to resume: a fresh start would
// overwrite them (an error telling to use the overwrite option). One case passes: best/ alone
// with the same recorded options, left by a validation before the first checkpoint of a run
// killed then, which the same options may start again. `o` resolved.
void check_fresh_start(const TrainOptions& o, const OptionSpeller& name = field_name);

// A Trainer whose errors name the options through `name` (`tfm train` passes its flags).
Trainer make_trainer(TrainOptions o, TrainCallbacks callbacks, const OptionSpeller& name);

// The effective options as a config file (flag names without "--"; what `tfm train --config`
// reads back), with compute_type as "precision" in the resolved form.
std::string train_options_json(const TrainOptions& o);

}  // namespace tfm::runtime
