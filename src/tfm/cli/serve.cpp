// tfm serve --model DIR [--host H] [--port P] [limits]: flags into ServeOptions, then one serve()
// call (src/tfm/serve/server.h), which returns after SIGTERM has drained the requests in flight.
#include <CLI/CLI.hpp>

#include "tfm/cli/commands.h"
#include "tfm/cli/flags.h"
#include "tfm/serve/server.h"

namespace tfm::cli {

void add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over HTTP (docs/serve.md)");
  static serve::ServeOptions o;
  static std::string precision = "fp32", device = "cpu";
  cmd->add_option("-m,--model", o.model_dir, "Model directory (with its vocabulary)")->required();
  cmd->add_option("--host", o.host, "Address to listen on (default 127.0.0.1: this machine only)");
  cmd->add_option("--port", o.port, "Port (default 8080; 0: any free port, logged)");
  cmd->add_option("--compute-type,--precision", precision,
                  "Linear layers in fp32, bf16, int8 or auto");
  cmd->add_option("--device", device, "cpu, or cuda (a CUDA build on a GPU machine)");
  cmd->add_option("--threads", o.translator.intra_threads,
                  "Threads of each batch (0: all cores / inter-threads)");
  cmd->add_option("--inter-threads", o.translator.inter_threads, "Batches translated at once");
  cmd->add_option("--max-batch-size", o.translator.max_batch_size,
                  "Sentences a batch the model runs (default 32)");
  cmd->add_option("--max-batch-tokens", o.translator.max_batch_tokens,
                  "Source tokens a batch gathers (default 4096; 0: --max-batch-size sentences)");
  cmd->add_option("--max-batch-delay-ms", o.translator.max_batch_delay_ms,
                  "How long a sentence waits for others to batch with (default 5; 0: none)");
  cmd->add_option("--max-queue", o.translator.max_queued_requests,
                  "Requests admitted at once; more get 503 (default 128; 0: no limit)");
  cmd->add_option("--max-request-bytes", o.max_request_bytes,
                  "Largest request body; larger get 413 (default 1048576)");
  cmd->add_option("--max-sentences", o.max_sentences,
                  "Texts a request; more get 413 (default 256)");
  cmd->add_option("--timeout-ms", o.timeout_ms,
                  "Time a request may take; later get 504 (default 30000)");
  cmd->add_option("--read-timeout-ms", o.read_timeout_ms,
                  "Time a request's head and body may take to arrive; later get 408 (default "
                  "30000)");
  cmd->add_option("--max-pending-connections", o.max_pending_connections,
                  "Connections waiting for a request at once; one more closes the oldest "
                  "(default 1024)");
  cmd->add_option("--cors", o.cors_origins,
                  "Let pages from ORIGIN call the API (http://host:port, or *); repeatable");
  cmd->add_option("--source-lang", o.source_lang,
                  "The model's source language, for GET /languages and LibreTranslate (de)");
  cmd->add_option("--target-lang", o.target_lang,
                  "The model's target language, for GET /languages and LibreTranslate (en)");
  cmd->add_option("--api-key", o.api_key,
                  "Require 'Authorization: Bearer KEY' (default: open; or set TFM_API_KEY)")
      ->envname("TFM_API_KEY");
  cmd->callback([] {
    o.translator.compute_type = parse_compute_type(precision);
    o.translator.device = parse_device(device);
    const OptionSpeller flags = flag_speller({{"intra_threads", "--threads"},
                                              {"compute_type", "--compute-type"},
                                              {"max_queued_requests", "--max-queue"},
                                              {"cors_origins", "--cors"}});
    validate_translator_options(o.translator, flags);
    serve::validate_serve_options(o, flags);
    serve::serve(o);
  });
}

}  // namespace tfm::cli
