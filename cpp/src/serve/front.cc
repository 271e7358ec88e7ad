// The front (front.h): an epoll loop that accepts, frames requests (Content-Length or chunked) under
// a deadline, and hands complete requests to a worker pool, where cpp-httplib parses, routes and
// answers them from the bytes already read.
#include "front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace tritium::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxHeaderBytes = 64u << 10;       // the whole header block; larger gets 431
constexpr std::size_t kMaxChunkLine = 1024;              // a chunk-size line with its extensions
constexpr auto kSweep = std::chrono::milliseconds(100);  // how often deadlines are checked
// After a refusal the front reads and drops what the client still sends, for at most this long, before
// closing: closing a socket with unread bytes resets it, and the client would lose the answer.
constexpr auto kLinger = std::chrono::seconds(2);

const char* reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    default:
      return "Error";
  }
}

// A whole answer the front sends itself, closing the connection after it.
std::string closing_answer(int status, const std::string& message) {
  const std::string body = Json{{"error", message}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}", status,
      reason(status), body.size(), status == 429 ? "Retry-After: 1\r\n" : "", body);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string address_text(const sockaddr_storage& addr, int* port) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    *port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    *port = ntohs(a.sin6_port);
  }
  return text;
}

// A connection. The front owns it; while `busy` a worker answers its request and the front leaves it
// be (a worker's writes happen before it clears `busy`, and the front reads only after seeing it clear).
struct Conn {
  int fd = -1;
  std::string peer;  // the per-client bound's key
  int peer_port = 0;
  std::string in;  // bytes read and not yet answered; the request being framed starts at 0
  Clock::time_point deadline;
  bool started = false;    // the current request's first byte has arrived (else the connection is idle)
  bool continued = false;  // "100 Continue" sent for the current request
  bool eof = false;        // the client shut its side: answer what is whole, then close
  std::atomic<bool> busy{false};
  bool counted = false;    // counts against its client's bound
  bool lingering = false;  // refused: its answer is sent, the rest of its bytes are dropped
  std::size_t served = 0;
  // Framing of the request at the head of `in`.
  std::size_t scanned = 0;     // bytes already searched for the header's end
  std::size_t header_end = 0;  // 0 until found: the offset just past the blank line
  bool chunked = false;
  std::size_t content_length = 0;
  std::size_t chunk_at = 0;     // chunked: the next chunk-size line
  std::size_t chunk_bytes = 0;  // chunked: body bytes so far
  bool expect_continue = false;
  std::string method, path;
  std::size_t length = 0;  // the whole request's bytes, once framed

  void next_request() {
    in.erase(0, length);
    scanned = header_end = content_length = chunk_at = chunk_bytes = length = 0;
    chunked = continued = expect_continue = false;
    method.clear();
    path.clear();
  }
};

// What framing found: more bytes needed, a whole request, or a refusal.
struct Step {
  enum Kind { kMore, kWhole, kRefuse } kind = kMore;
  int status = 0;
  std::string message;
};

Step refuse(int status, std::string message) { return {Step::kRefuse, status, std::move(message)}; }
Step whole() { return {Step::kWhole, 0, {}}; }

// Reads the header block's framing fields (RFC 9112 section 6): Content-Length or chunked, never both.
Step parse_header(Conn& c, std::size_t max_body) {
  std::string_view block(c.in.data(), c.header_end - 4);
  bool first = true, has_length = false;
  while (!block.empty()) {
    const std::size_t eol = block.find("\r\n");
    std::string_view line = block.substr(0, eol);
    block = eol == std::string_view::npos ? std::string_view() : block.substr(eol + 2);
    if (first) {
      if (line.empty()) continue;  // a stray CRLF before the request line is allowed
      first = false;
      const std::size_t sp = line.find(' ');
      c.method = std::string(line.substr(0, sp));
      if (sp != std::string_view::npos) {
        std::string_view target = line.substr(sp + 1);
        target = target.substr(0, std::min(target.find(' '), target.find('?')));
        c.path = std::string(target.substr(0, 256));
      }
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // cpp-httplib skips such lines too
    const std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos)
        return refuse(400, fmt::format("Content-Length: expected a byte count, got \"{}\"", value.substr(0, 40)));
      const std::size_t n = std::stoull(std::string(value));
      if (has_length && n != c.content_length) return refuse(400, "two different Content-Length headers");
      has_length = true;
      c.content_length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (!iequals(value, "chunked"))
        return refuse(501, fmt::format("Transfer-Encoding \"{}\" is not supported; send Content-Length or chunked",
                                       value.substr(0, 40)));
      c.chunked = true;
    } else if (iequals(name, "Expect") && iequals(value, "100-continue")) {
      c.expect_continue = true;
    }
  }
  if (has_length && c.chunked) return refuse(400, "both Content-Length and Transfer-Encoding: send one");
  if (c.content_length > max_body)
    return refuse(413, fmt::format("request body too large: {} bytes, the limit is {} (--max-body-mb)",
                                   c.content_length, max_body));
  c.chunk_at = c.header_end;
  return {};
}

// Advances the framing of the request at the head of c.in over the bytes read so far.
Step frame(Conn& c, std::size_t max_body) {
  if (c.header_end == 0) {
    const std::size_t from = c.scanned < 3 ? 0 : c.scanned - 3;
    const std::size_t end = c.in.find("\r\n\r\n", from);
    if (end == std::string::npos) {
      c.scanned = c.in.size();
      if (c.in.size() > kMaxHeaderBytes)
        return refuse(431, fmt::format("the request header is over {} KiB", kMaxHeaderBytes >> 10));
      return {};
    }
    if (end + 4 > kMaxHeaderBytes)
      return refuse(431, fmt::format("the request header is over {} KiB", kMaxHeaderBytes >> 10));
    c.header_end = end + 4;
    if (Step s = parse_header(c, max_body); s.kind == Step::kRefuse) return s;
  }
  if (!c.chunked) {
    if (c.in.size() < c.header_end + c.content_length) return {};
    c.length = c.header_end + c.content_length;
    return whole();
  }
  for (;;) {  // chunked: size line, data, CRLF; a zero-size chunk, then trailers up to a blank line
    const std::size_t eol = c.in.find("\r\n", c.chunk_at);
    if (eol == std::string::npos) {
      if (c.in.size() - c.chunk_at > kMaxChunkLine) return refuse(400, "a chunk-size line is too long");
      return {};
    }
    std::string_view line(c.in.data() + c.chunk_at, eol - c.chunk_at);
    line = trim(line.substr(0, line.find(';')));
    std::size_t size = 0;
    if (line.empty() || line.size() > 15 || line.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
      return refuse(400, "bad chunked body: a chunk size is not a hexadecimal number");
    size = std::stoull(std::string(line), nullptr, 16);
    if (size == 0) {
      if (c.in.compare(eol + 2, 2, "\r\n") == 0) {
        c.length = eol + 4;
        return whole();
      }
      const std::size_t end = c.in.find("\r\n\r\n", eol + 2);
      if (end == std::string::npos) {
        if (c.in.size() - eol > kMaxHeaderBytes) return refuse(431, "the chunked body's trailers are too long");
        return {};
      }
      c.length = end + 4;
      return whole();
    }
    c.chunk_bytes += size;
    if (c.chunk_bytes > max_body)
      return refuse(413, fmt::format("request body too large: over {} bytes (--max-body-mb)", max_body));
    if (c.in.size() < eol + 2 + size + 2) return {};
    if (c.in.compare(eol + 2 + size, 2, "\r\n") != 0)
      return refuse(400, "bad chunked body: a chunk does not end in CRLF");
    c.chunk_at = eol + 2 + size + 2;
  }
}

// The request cpp-httplib reads: the bytes the front framed. Writes go to the socket, within a deadline
// (a worker waits for a slow reader until then; the front thread never waits).
class RequestStream final : public httplib::Stream {
 public:
  RequestStream(const Conn& c, Clock::time_point deadline, bool wait) : c_(c), deadline_(deadline), wait_(wait) {}
  bool is_readable() const override { return pos_ < c_.length; }
  bool is_writable() const override { return !failed_; }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, c_.length - pos_);
    std::memcpy(ptr, c_.in.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // The front sent "100 Continue" before the body came; cpp-httplib would send it again.
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (c_.continued && !skipped_ && std::string_view(ptr, size) == kContinue) {
      skipped_ = true;
      return static_cast<ssize_t>(size);
    }
    std::size_t done = 0;
    while (done < size && !failed_) {
      const ssize_t n = ::send(c_.fd, ptr + done, size - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
        pollfd p{c_.fd, POLLOUT, 0};
        if (left <= 0 || (::poll(&p, 1, static_cast<int>(left)) <= 0 && errno != EINTR)) failed_ = true;
      } else {
        failed_ = true;
      }
    }
    return failed_ ? -1 : static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.peer;
    port = c_.peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    port = 0;
    ip = getsockname(c_.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 ? address_text(addr, &port) : "";
  }
  socket_t socket() const override { return c_.fd; }
  bool failed() const { return failed_; }

 private:
  const Conn& c_;
  std::size_t pos_ = 0;
  Clock::time_point deadline_;
  bool wait_;
  bool failed_ = false;
  bool skipped_ = false;
};

}  // namespace

struct Front::Impl {
  FrontOptions options;
  Answer answer;
  Refused refused;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, spare_fd = -1;
  int port = 0;
  std::unique_ptr<httplib::ThreadPool> pool;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, std::size_t> per_client;
  std::atomic<bool> stopping{false};
  std::mutex returned_mutex;
  std::vector<std::pair<Conn*, bool>> returned;  // (connection, keep it open) from the workers

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd, spare_fd})
      if (fd >= 0) ::close(fd);
    for (auto& [_, c] : conns) ::close(c->fd);
  }

  std::chrono::duration<double> seconds(double s) const { return std::chrono::duration<double>(s); }

  // Connections are one-shot in epoll: an event disarms one until it is armed again, by the front
  // when it waits for more bytes, or by the worker that answered it, without a trip through the front.
  void arm(Conn& c, int op = EPOLL_CTL_MOD) const {
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    e.data.ptr = &c;
    epoll_ctl(epoll_fd, op, c.fd, &e);
  }

  void close(Conn& c) {
    ::close(c.fd);  // which takes it out of epoll
    if (auto it = per_client.find(c.peer); c.counted && it != per_client.end() && --it->second == 0)
      per_client.erase(it);
    conns.erase(&c);
  }

  // Best effort and without waiting: a client that does not read its answers is not waited for.
  static void send_now(int fd, const std::string& bytes) {
    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void refuse(Conn& c, int status, const std::string& message) {
    send_now(c.fd, closing_answer(status, message));
    ::shutdown(c.fd, SHUT_WR);
    refused(c.path.empty() ? "-" : c.path, status);
    c.lingering = true;
    c.in.clear();
    c.deadline = Clock::now() + kLinger;
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
          // Out of descriptors: take the connection with the spare one and close it at once, so the
          // listening socket does not stay readable and spin this loop.
          ::close(spare_fd);
          const int shed = accept(listen_fd, nullptr, nullptr);
          if (shed >= 0) ::close(shed);
          spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
          continue;
        }
        return;  // EAGAIN: none left
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // headers and body go out in two writes
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->peer = address_text(addr, &c->peer_port);
      c->deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds(options.keep_alive_timeout_s));
      Conn& ref = *c;
      conns.emplace(&ref, std::move(c));
      arm(ref, EPOLL_CTL_ADD);
      std::size_t& open = per_client[ref.peer];
      if (open >= options.max_client_connections) {  // refused, and lingering briefly outside the count
        refuse(ref, 429,
               fmt::format("{} has {} connections open, the limit per client (--max-client-connections); "
                           "reuse or close them",
                           ref.peer, open));
      } else {
        ++open;
        ref.counted = true;
      }
    }
  }

  void read_from(Conn& c) {
    char buf[64 << 10];
    if (c.lingering) {  // drop what comes; a megabyte at a time, so a fast sender cannot hold the loop
      for (int k = 0; k < 16; ++k) {
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n > 0) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return close(c);
        break;
      }
      return arm(c);
    }
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        if (!c.started) {
          c.started = true;
          c.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds(options.read_timeout_s));
        }
        c.in.append(buf, static_cast<std::size_t>(n));
        if (static_cast<std::size_t>(n) < sizeof buf) break;
        // Framing refuses a request past the limits; stop reading well before memory does.
        if (c.in.size() > options.max_body_bytes + 2 * kMaxHeaderBytes) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c.eof = true;  // the client closed or reset its side
      break;
    }
    if (serve(c)) arm(c);
  }

  // Frames and answers what c holds: fast paths here, the rest on a worker. True while the front
  // still holds c and waits for its bytes (so it is to be armed); false once closed or with a worker.
  bool serve(Conn& c) {
    while (!c.in.empty()) {
      const Step step = frame(c, options.max_body_bytes);
      if (step.kind == Step::kRefuse) {
        refuse(c, step.status, step.message);
        return true;
      }
      if (step.kind == Step::kMore) {
        if (c.eof) break;
        if (c.expect_continue && !c.continued && c.header_end > 0) {
          send_now(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
          c.continued = true;
        }
        return true;
      }
      const bool fast = c.method == "GET" && std::find(options.fast_paths.begin(), options.fast_paths.end(), c.path) !=
                                                 options.fast_paths.end();
      if (!fast) {
        c.busy = true;
        pool->enqueue([this, conn = &c] { work(*conn); });
        return false;
      }
      bool closed = false;
      RequestStream stream(c, Clock::now(), false);
      const bool ok = answer(stream, c.eof || stopping, closed) && !stream.failed();
      ++c.served;
      c.next_request();
      if (!ok || closed || c.eof) {
        close(c);
        return false;
      }
      restart(c);
    }
    if (!c.eof) return true;
    close(c);
    return false;
  }

  // The deadline for what follows an answer: the next request's, if its bytes came already.
  void restart(Conn& c) {
    c.started = !c.in.empty();
    c.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    seconds(c.started ? options.read_timeout_s : options.keep_alive_timeout_s));
  }

  // On a worker thread.
  void work(Conn& c) {
    bool closed = false;
    const bool close = stopping || c.eof || c.served + 1 >= options.max_requests_per_connection;
    RequestStream stream(c, Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds(options.read_timeout_s)),
                         true);
    const bool keep = answer(stream, close, closed) && !stream.failed() && !closed && !close;
    ++c.served;
    c.next_request();
    if (keep && c.in.empty()) {  // the common case: wait for the next request, armed from here
      restart(c);
      const int fd = c.fd;
      epoll_event e{};
      e.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
      e.data.ptr = &c;
      c.busy.store(false, std::memory_order_release);  // the front's from here on
      epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &e);
      return;
    }
    {  // to close, or with a pipelined request already read: the front's to do
      std::lock_guard lock(returned_mutex);
      returned.emplace_back(&c, keep);
    }
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  void take_returned() {
    std::uint64_t count;
    (void)!::read(wake_fd, &count, sizeof count);
    std::vector<std::pair<Conn*, bool>> back;
    {
      std::lock_guard lock(returned_mutex);
      back.swap(returned);
    }
    for (auto [c, keep] : back) {
      c->busy = false;
      if (!keep || stopping) {
        close(*c);
        continue;
      }
      restart(*c);
      if (serve(*c)) arm(*c);  // a pipelined request is here already
    }
  }

  void sweep() {
    const auto now = Clock::now();
    std::vector<Conn*> late;
    for (auto& [c, _] : conns)
      if (!c->busy && now >= c->deadline) late.push_back(c);
    for (Conn* c : late) {
      if (c->lingering)
        close(*c);
      else if (c->started)
        refuse(*c, 408,
               fmt::format("the request did not arrive whole within {} s (--read-timeout)", options.read_timeout_s));
      else
        close(*c);  // idle past the keep-alive bound
    }
  }
};

Result<std::unique_ptr<Front>> Front::listen(const std::string& host, int port, FrontOptions options, Answer answer,
                                             Refused refused) {
  auto impl = std::make_unique<Impl>();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0)
    return Error{fmt::format("cannot listen on {}:{}: {}; pass --host an address of this machine", host, port,
                             gai_strerror(rc))};
  int error = 0;
  for (addrinfo* ai = found; ai && impl->listen_fd < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    // SO_REUSEADDR lets a restart bind over connections in TIME_WAIT; it never lets two servers
    // listen on one port. SO_REUSEPORT would, and is left off.
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      impl->listen_fd = fd;
    } else {
      error = errno;
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  if (impl->listen_fd < 0) {
    const std::string why =
        error == EADDRINUSE ? "the port is in use (another server is listening there); stop it or pick another --port"
        : error == EADDRNOTAVAIL ? "not an address of this machine; pick another --host"
        : error == EACCES        ? "permission denied (ports below 1024 need privileges); pick another --port"
                                 : std::strerror(error);
    return Error{fmt::format("cannot listen on {}:{}: {}", host, port, why)};
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  address_text(addr, &impl->port);
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0)
    return Error{fmt::format("cannot start the server: {}", std::strerror(errno))};
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = nullptr;  // the listening socket
  epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->listen_fd, &e);
  e.data.ptr = &impl->wake_fd;
  epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->wake_fd, &e);
  impl->options = std::move(options);
  impl->answer = std::move(answer);
  impl->refused = std::move(refused);
  return std::unique_ptr<Front>(new Front(std::move(impl)));
}

Front::Front(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Front::~Front() = default;

int Front::port() const { return impl_->port; }

void Front::run() {
  Impl& f = *impl_;
  f.pool = std::make_unique<httplib::ThreadPool>(static_cast<std::size_t>(std::max(1, f.options.threads)));
  epoll_event events[256];
  auto next_sweep = Clock::now() + kSweep;
  while (!f.stopping) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_sweep - Clock::now()).count();
    const int n = epoll_wait(f.epoll_fd, events, 256, static_cast<int>(std::max<long long>(0, wait) + 1));
    for (int i = 0; i < n && !f.stopping; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == nullptr)
        f.accept_all();
      else if (tag == &f.wake_fd)
        f.take_returned();
      else
        f.read_from(*static_cast<Conn*>(tag));
    }
    if (Clock::now() >= next_sweep) {
      f.sweep();
      next_sweep = Clock::now() + kSweep;
    }
  }
  ::close(f.listen_fd);  // new connections are refused from here on
  f.listen_fd = -1;
  std::vector<Conn*> idle;
  for (auto& [c, _] : f.conns)
    if (!c->busy) idle.push_back(c);
  for (Conn* c : idle) f.close(*c);
  f.pool->shutdown();  // the workers finish the requests they hold
  for (auto& [c, _] : f.conns) ::close(c->fd);
  f.conns.clear();
}

void Front::stop() {
  impl_->stopping = true;
  const std::uint64_t one = 1;
  (void)!::write(impl_->wake_fd, &one, sizeof one);
}

}  // namespace tritium::serve
