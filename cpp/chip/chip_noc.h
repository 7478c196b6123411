#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tinytpu {

// mkFIFOF as bsc builds it (FIFO2): two entries; notFull, notEmpty and first read the cycle's start, so an
// enq and a deq may both fire in a cycle that starts with one entry, and a full FIFO takes no enq even in a
// cycle that dequeues. Clocked as the chip's units (sparse_core.h).
template <class T>
class Fifo2 {
 public:
  bool not_full() const { return size_ < 2; }
  bool not_empty() const { return size_ > 0; }
  const T& first() const { return items_[0]; }  // the caller checks not_empty()
  void enq(const T& v) {                        // the caller checks not_full(); once a cycle
    enq_ = true;
    enq_value_ = v;
  }
  void deq() { deq_ = true; }  // the caller checks not_empty(); once a cycle
  void tick() {
    if (deq_) {
      items_[0] = items_[1];
      --size_;
    }
    if (enq_) items_[size_++] = enq_value_;
    enq_ = deq_ = false;
  }

 private:
  std::array<T, 2> items_{};
  int size_ = 0;
  bool enq_ = false, deq_ = false;
  T enq_value_{};
};

struct NocPacket {
  uint8_t dst = 0, src = 0;  // UInt#(4)
  uint32_t payload = 0;
  bool operator==(const NocPacket& o) const { return dst == o.dst && src == o.src && payload == o.payload; }
};

// ChipNoC#(numNodes) (ChipNoC.bsv, hardware.md §6): one shared ring FIFO and an inbox FIFO per node. A send
// to the sender itself goes straight to its inbox (readable next cycle); any other goes on the ring, whose
// head do_route moves into its destination's inbox the next cycle: readable two cycles after the send, one
// packet a cycle, whatever the distance. A packet for a full inbox is dropped. Clocked as the chip's units
// (sparse_core.h).
//
// As bsc (B-Lang-org/bsc 941eecf, its default flags: aggressive conditions) builds the reference with node
// numbers fixed where the methods are called, as its testbench does: send waits only for room on the ring (a
// send to itself never waits), recv for its own inbox, and do_route for nothing but a packet; both send and
// do_route enqueue into inboxes, and do_route waits in a cycle a send to itself does. (A caller that picks
// node numbers at run time, or a build without aggressive conditions, gets bsc's conservative guards instead,
// which wait on every inbox: kernels/reference/chip/README.md.)
class ChipNoc {
 public:
  explicit ChipNoc(int nodes);
  int nodes() const { return int(inbox_.size()); }

  bool can_send(int src, const NocPacket& pkt) const;  // send's guard
  void send(int src, const NocPacket& pkt);
  bool can_recv(int dst) const {
    return inbox_[size_t(node(dst, "canRecv"))].not_empty();
  }  // recv's guard too
  NocPacket recv(int dst);
  uint64_t dropped() const { return dropped_; }  // packets that found their inbox full

  void tick();  // do_route, then the FIFOs' writes

 private:
  int node(int n, const char* what) const;
  int destination(const NocPacket& pkt, const char* what) const;  // truncate(pkt.dst), a node of the NoC

  std::vector<Fifo2<NocPacket>> inbox_;
  Fifo2<NocPacket> ring_;
  bool sent_ = false, looped_ = false, received_ = false;
  uint64_t dropped_ = 0;
};

}  // namespace tinytpu
