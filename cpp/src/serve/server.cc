// The HTTP server (docs/serve.md): the front (front.h) reads requests whole, cpp-httplib parses and
// routes them; around the routes of api.cc, admission control, bearer auth, per-request timeouts,
// Prometheus metrics and a graceful drain.
#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "api.h"
#include "front.h"
#include "stats.h"
#include "tritium/serve.h"

namespace tritium {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

thread_local Clock::time_point request_start;  // a request is read, handled and logged on one thread

void answer(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  // Text cut by a verifier snippet may end inside a UTF-8 sequence: never a reason to fail the answer.
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void refuse(httplib::Response& res, int status, const std::string& message) {
  answer(res, status, {{"error", message}});
}

// The routes' server, fed by the front: cpp-httplib's parsing and dispatch without its accept loop.
class Http : public httplib::Server {
 public:
  bool answer(httplib::Stream& stream, bool close, bool& closed) {
    return process_request(stream, close, closed, nullptr);
  }
};

const std::set<std::string> kRoutes = {"/v1/verify",  "/v1/evaluate", "/v1/reward",
                                       "/get_reward", "/healthz",     "/metrics"};

}  // namespace

struct Server::Impl {
  ServeOptions options;
  std::unique_ptr<Engine> engine;
  std::optional<serve::Api> api;
  serve::Stats stats;
  Http http;
  std::unique_ptr<serve::Front> front;
  int port = 0;
  fs::path temp_dir;  // holds the default cache; removed with the server

  std::mutex mutex;
  std::condition_variable idle;
  std::size_t pending_items = 0;  // items evaluating now, over all requests
  std::size_t busy = 0;           // POST requests being answered now
  std::size_t evaluating = 0;     // of which evaluate the engine
  bool draining = false;

  ~Impl() {
    if (!temp_dir.empty()) {
      std::error_code ec;
      fs::remove_all(temp_dir, ec);
    }
  }

  // Reserves room for `items` evaluating items, or says why not (413 never fits, 429 full, 503 draining).
  std::optional<std::pair<int, std::string>> admit(std::size_t items) {
    std::lock_guard lock(mutex);
    if (draining) return std::pair{503, std::string("the server is draining; retry on another endpoint")};
    if (items > options.max_pending)
      return std::pair{
          413, fmt::format("{} items can never fit: the server evaluates at most {} at once (--max-pending)", items,
                           options.max_pending)};
    if (items > 0) {
      // Evaluations block their HTTP thread: keep some threads free for cheap routes.
      const auto eval_threads = static_cast<std::size_t>(std::max(1, options.threads - 8));
      if (pending_items + items > options.max_pending || evaluating >= eval_threads)
        return std::pair{429, fmt::format("overloaded: {} items evaluating, limit {}; retry later", pending_items,
                                          options.max_pending)};
      pending_items += items;
      ++evaluating;
    }
    ++busy;
    return std::nullopt;
  }

  void release(std::size_t items) {
    {
      std::lock_guard lock(mutex);
      pending_items -= items;
      evaluating -= items > 0;
      --busy;
    }
    idle.notify_all();
  }

  // Runs an API call; the answer is 504 after the request timeout while the work runs on (its
  // items stay admitted until it ends, so a timed-out request still counts against overload).
  void handle(const std::string& route, const httplib::Request& req, httplib::Response& res,
              const std::function<Json(serve::Api&, const Json&)>& call) {
    Json body;
    std::size_t items = 0;
    try {
      body = serve::parse_body(req.body);
      items = api->check(route, body);
    } catch (const serve::ApiError& e) {
      return refuse(res, e.status, e.message);
    }
    if (auto no = admit(items)) {
      if (no->first == 429) res.set_header("Retry-After", "1");
      return refuse(res, no->first, no->second);
    }
    auto work = std::make_shared<std::packaged_task<Json()>>([this, call, body = std::move(body), items]() {
      struct Release {
        Impl* self;
        std::size_t items;
        ~Release() { self->release(items); }
      } release{this, items};
      return call(*api, body);
    });
    auto result = work->get_future();
    if (items == 0) {
      (*work)();  // cheap: answer on this thread
    } else {
      std::thread([work] { (*work)(); }).detach();
      if (result.wait_for(std::chrono::duration<double>(options.request_timeout_s)) == std::future_status::timeout)
        return refuse(
            res, 504,
            fmt::format("not finished within {} s (the work goes on and will be cached)", options.request_timeout_s));
    }
    try {
      answer(res, 200, result.get());
    } catch (const serve::ApiError& e) {
      refuse(res, e.status, e.message);
    } catch (const std::exception& e) {
      refuse(res, 500, fmt::format("internal error: {}; please report it", e.what()));
    }
  }

  void route(const std::string& path, Json (serve::Api::*method)(const Json&)) {
    http.Post(path, [this, path, method](const httplib::Request& req, httplib::Response& res) {
      handle(path, req, res, [method](serve::Api& api, const Json& body) { return (api.*method)(body); });
    });
  }

  Json health() {
    std::lock_guard lock(mutex);
    return {{"status", draining ? "draining" : "ok"},
            {"tritium", version()},
            {"engine", engine->info()},
            {"pending_items", pending_items},
            {"busy_requests", busy}};
  }

  bool authorised(const httplib::Request& req) const {
    return options.token.empty() || req.path == "/healthz" ||
           req.get_header_value("Authorization") == "Bearer " + options.token;
  }

  void install() {
    http.set_payload_max_length(options.max_body_bytes);
    // Only what the Keep-Alive header of an answer says; the front enforces both.
    http.set_keep_alive_max_count(1000);
    http.set_keep_alive_timeout(static_cast<time_t>(std::max(1.0, options.keep_alive_timeout_s)));
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      request_start = Clock::now();
      if (authorised(req)) return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      refuse(res, 401, "missing or wrong bearer token (Authorization: Bearer TOKEN)");
      return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404)
        refuse(res, 404, fmt::format("no route {} {} (docs/serve.md lists them)", req.method, req.path.substr(0, 200)));
      else
        refuse(res, res.status,
               res.status == 400   ? "malformed HTTP request line or header"
               : res.status == 413 ? "request body too large"
               : res.status == 414 ? "request target too long"
                                   : fmt::format("HTTP {}", res.status));
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
      std::string what = "unknown";
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      refuse(res, 500, fmt::format("internal error: {}; please report it", what));
    });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const double seconds = std::chrono::duration<double>(Clock::now() - request_start).count();
      stats.request(kRoutes.count(req.path) ? req.path : "other", res.status, seconds);  // bounded label set
    });
    http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) { answer(res, 200, health()); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex);
      res.set_content(stats.render(pending_items, busy, draining), "text/plain; version=0.0.4");
    });
    http.Post("/v1/verify", [this](const httplib::Request& req, httplib::Response& res) {
      handle("/v1/verify", req, res, [](serve::Api& api, const Json& body) { return api.verify(body); });
    });
    route("/v1/evaluate", &serve::Api::evaluate);
    route("/v1/reward", &serve::Api::reward);
    route("/get_reward", &serve::Api::get_reward);
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::create(ServeOptions options) {
  auto impl = std::make_unique<Impl>();
  Impl* self = impl.get();
  // Bind before the engine starts: a busy port fails in milliseconds, not after the runners start.
  serve::FrontOptions front;
  front.read_timeout_s = options.read_timeout_s;
  front.keep_alive_timeout_s = options.keep_alive_timeout_s;
  front.max_client_connections = options.max_client_connections;
  front.max_body_bytes = options.max_body_bytes;
  front.threads = options.threads;
  front.fast_paths = {"/healthz"};
  auto listening = serve::Front::listen(
      options.host, options.port, std::move(front),
      [self](httplib::Stream& stream, bool close, bool& closed) { return self->http.answer(stream, close, closed); },
      [self](const std::string& path, int status) {
        self->stats.request(kRoutes.count(path) ? path : "other", status, 0);
      });
  if (!listening) return listening.error();
  impl->front = std::move(*listening);
  impl->port = impl->front->port();
  Suite tasks;
  if (!options.tasks.empty()) {
    auto suite = load_suite(options.tasks);
    if (!suite) return suite.error();
    tasks = std::move(*suite);
  }
  if (auto config = reward_config_from_json(options.reward); !config) return config.error();
  if (options.engine.cache.empty()) {  // repeated candidates are the common case in RL
    std::string dir = (fs::temp_directory_path() / "tritium-serve-XXXXXX").string();
    if (!mkdtemp(dir.data())) return Error{"could not create a temporary directory for the verdict cache"};
    impl->temp_dir = dir;
    options.engine.cache = (impl->temp_dir / "verdicts.sqlite").string();
  }
  auto engine = Engine::create(options.engine);
  if (!engine) return engine.error();
  impl->engine = std::move(*engine);
  impl->options = std::move(options);
  impl->api.emplace(std::move(tasks), *impl->engine, impl->options.reward, impl->options.max_items,
                    [self](const Verdict& v) { self->stats.verdict(v.status, v.cache_hit); });
  impl->install();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }

void Server::run() { impl_->front->run(); }

void Server::drain() {
  {
    std::unique_lock lock(impl_->mutex);
    impl_->draining = true;
    impl_->idle.wait_for(lock, std::chrono::duration<double>(impl_->options.drain_timeout_s),
                         [&] { return impl_->busy == 0 && impl_->pending_items == 0; });
  }
  impl_->front->stop();
}

}  // namespace tritium
