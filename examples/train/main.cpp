// Trains a model with the installed tfm library: the log on stderr, a line per validation.
// Usage: train MODEL_DIR TRAIN_SRC TRAIN_TRG VOCAB [PRESET] [MAX_UPDATES]
#include <tfm/trainer.h>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: " << argv[0]
              << " MODEL_DIR TRAIN_SRC TRAIN_TRG VOCAB [PRESET] [MAX_UPDATES]\n";
    return 2;
  }
  tfm::TrainOptions o;
  o.model_dir = argv[1];
  o.train_src = argv[2], o.train_trg = argv[3], o.vocab = argv[4];
  o.preset = argc > 5 ? argv[5] : "small";
  o.max_updates = argc > 6 ? std::stoll(argv[6]) : 1000;
  tfm::TrainCallbacks cb;
  cb.on_log = [](const std::string& line) { std::cerr << line << "\n"; };
  try {
    const tfm::TrainResult r = tfm::Trainer(o, cb).train();
    std::cout << r.updates << " updates (" << r.stop_reason << "): " << r.model_dir << "\n";
  } catch (const tfm::Error& e) {
    std::cerr << "error: " << e.message() << "\n";
    return 1;
  }
}
