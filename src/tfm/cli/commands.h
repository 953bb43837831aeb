// One function per subcommand: registers its flags and its callback on the app.
#pragma once

namespace CLI {
class App;
}

namespace tfm::cli {

void add_info(CLI::App& app);
void add_score(CLI::App& app);
void add_eval(CLI::App& app);
void add_translate(CLI::App& app);
void add_generate(CLI::App& app);
void add_vocab(CLI::App& app);
void add_train(CLI::App& app);
void add_average(CLI::App& app);
void add_convert(CLI::App& app);
void add_prepare_ding(CLI::App& app);
void add_prepare_bible(CLI::App& app);
void add_bench(CLI::App& app);
void add_serve(CLI::App& app);
void add_plot(CLI::App& app);

}  // namespace tfm::cli
