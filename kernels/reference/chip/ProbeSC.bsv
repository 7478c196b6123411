package ProbeSC;

// Extra probe for SparseCore (not part of the tinytpu repo).
// Two independent SparseCore#(8,4,3) instances:
//   scZ: submitBag with count=0 at cycle 3 -> when does isDone become true?
//   scT: count=3 (== bagSize) at cycle 3 with entries 0,2,5 -> timeline + result
// Also: when does submitBag's guard (state==IDLE) allow a second submit after reset?

import Vector     :: *;
import SparseCore :: *;

(* synthesize *)
module mkProbeSC(Empty);

   SparseCore_IFC#(8, 4, 3) scZ <- mkSparseCore;
   SparseCore_IFC#(8, 4, 3) scT <- mkSparseCore;

   Reg#(UInt#(8)) cycle <- mkReg(0);

   rule count_cycles;
      cycle <= cycle + 1;
      if (cycle == 20) $finish(0);
   endrule

   rule mon;
      $display("Cycle %0d: scZ.isDone=%b  scT.isDone=%b", cycle, scZ.isDone, scT.isDone);
   endrule

   rule load0 (cycle == 0);
      Vector#(4, Int#(32)) e = replicate(0); e[0] = 1;
      scT.loadEmbedding(0, e); scZ.loadEmbedding(0, e);
   endrule
   rule load2 (cycle == 1);
      Vector#(4, Int#(32)) e = replicate(0); e[1] = 5;
      scT.loadEmbedding(2, e); scZ.loadEmbedding(2, e);
   endrule
   rule load5 (cycle == 2);
      Vector#(4, Int#(32)) e = replicate(0); e[2] = 3; e[3] = 7;
      scT.loadEmbedding(5, e); scZ.loadEmbedding(5, e);
      $display("Cycle %0d: tables loaded", cycle);
   endrule

   rule submitZ (cycle == 3);
      Vector#(3, UInt#(3)) idx = replicate(0);
      scZ.submitBag(idx, 0);
      $display("Cycle %0d: scZ.submitBag count=0 FIRED", cycle);
   endrule

   rule submitT (cycle == 3);
      Vector#(3, UInt#(3)) idx = newVector;
      idx[0] = 0; idx[1] = 2; idx[2] = 5;
      scT.submitBag(idx, 3);
      $display("Cycle %0d: scT.submitBag [0,2,5] count=3 FIRED", cycle);
   endrule

   rule showZ (scZ.isDone);
      let r = scZ.result;
      $display("Cycle %0d: scZ.result=[%0d,%0d,%0d,%0d]", cycle, r[0], r[1], r[2], r[3]);
   endrule

   rule showT (scT.isDone);
      let r = scT.result;
      $display("Cycle %0d: scT.result=[%0d,%0d,%0d,%0d]", cycle, r[0], r[1], r[2], r[3]);
   endrule

   // second round on scZ: reset at cycle 8, try to submit every cycle 8..12
   Reg#(Bool) z2 <- mkReg(False);
   rule resetZ (cycle == 8);
      scZ.reset;
      $display("Cycle %0d: scZ.reset FIRED", cycle);
   endrule
   rule submitZ2 (cycle >= 8 && cycle <= 12 && !z2);
      Vector#(3, UInt#(3)) idx = replicate(0); idx[0] = 5;
      scZ.submitBag(idx, 1);
      z2 <= True;
      $display("Cycle %0d: scZ.submitBag [5] count=1 FIRED", cycle);
   endrule

endmodule

endpackage
