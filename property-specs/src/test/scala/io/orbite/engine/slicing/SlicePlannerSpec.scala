package io.orbite.engine.slicing

import io.orbite.engine.{Op, PropertySupport}
import io.orbite.engine.slicing.SlicingGens._
import org.scalacheck.Gen
import org.scalatest.flatspec.AnyFlatSpec

/**
 * Slice geometry (C15): for any length up to 1 TiB, any power-of-two base block from 4 KiB to
 * 64 MiB and any caps from 1 to 1024, the plan tiles the request exactly, respects the op's cap,
 * and folds a short tail into its predecessor.
 */
class SlicePlannerSpec extends AnyFlatSpec with PropertySupport {
  override protected def cases: Int = 500

  private def ceilDiv(a: Long, b: Long): Long = (a + b - 1) / b

  "SlicePlanner" should "cover [0, length) exactly once, in order, with non-empty slices" in {
    forAll(genPlanInput) { in =>
      val plan = in.plan
      plan.lengthBytes() shouldBe in.lengthBytes
      plan.count() should be >= 1
      var next = 0L
      for ((offset, length) <- slices(plan)) {
        offset shouldBe next
        length should be > 0L
        next = offset + length
      }
      next shouldBe in.lengthBytes
    }
  }

  it should "use at most the op's slice cap (READ: maxReadSlices, WRITE: maxWriteSlices)" in {
    forAll(genPlanInput) { in =>
      in.plan.count() should be <= in.cap
    }
  }

  it should "use the op's own cap, not the other one" in {
    // A length that needs the op's cap to bind, with the other op's cap wide open.
    val gen = for {
      op <- Gen.oneOf(Op.READ, Op.WRITE)
      base <- genBaseBlock
      cap <- Gen.chooseNum(1, 64)
      length <- Gen.chooseNum(base * cap * 4, MaxLength).suchThat(_ >= base)
    } yield {
      val (maxRead, maxWrite) = if (op == Op.READ) (cap, 1024) else (1024, cap)
      PlanInput(op, length, base, maxRead, maxWrite)
    }
    forAll(gen) { in =>
      whenever(in.lengthBytes >= in.baseBlockBytes * in.cap * 4) {
        val plan = in.plan
        plan.count() should be <= in.cap
        plan.blockBytes() should be > in.baseBlockBytes
      }
    }
  }

  it should "give every slice but the last exactly blockBytes" in {
    forAll(genPlanInput) { in =>
      val plan = in.plan
      slices(plan).init.foreach { case (_, length) => length shouldBe plan.blockBytes() }
    }
  }

  it should "fold the tail: the last slice is length - (count-1)*block, in [block, 2*block) when count > 1" in {
    forAll(genPlanInput) { in =>
      val plan = in.plan
      val block = plan.blockBytes()
      val last = plan.length(plan.count() - 1)
      last shouldBe in.lengthBytes - (plan.count() - 1).toLong * block
      if (plan.count() > 1) {
        last should be >= block
        last should be < 2 * block
      } else {
        last shouldBe in.lengthBytes
      }
    }
  }

  it should "never leave room for one more full block (no slice shorter than a block except a lone one)" in {
    forAll(genPlanInput) { in =>
      val plan = in.plan
      val spare = in.lengthBytes - plan.count().toLong * plan.blockBytes()
      // Either every byte is in a whole block and less than a block is left over, or the request is
      // shorter than one block and travels as a single slice.
      if (in.lengthBytes >= plan.blockBytes()) spare should be < plan.blockBytes()
      else plan.count() shouldBe 1
    }
  }

  it should "use blocks of max(base, ceil(length / cap)): never below the base, adaptive only when the cap needs it" in {
    forAll(genPlanInput) { in =>
      val plan = in.plan
      plan.blockBytes() should be >= in.baseBlockBytes
      plan.blockBytes() shouldBe math.max(in.baseBlockBytes, ceilDiv(in.lengthBytes, in.cap.toLong))
    }
  }

  it should "send a request no longer than the base block as exactly one slice of the base block size" in {
    val gen = for {
      in <- genPlanInput
      length <- Gen.chooseNum(1L, in.baseBlockBytes)
    } yield in.copy(lengthBytes = length)
    forAll(gen) { in =>
      val plan = in.plan
      plan.count() shouldBe 1
      plan.blockBytes() shouldBe in.baseBlockBytes
      plan.length(0) shouldBe in.lengthBytes
    }
  }

  it should "say a request is a single slice exactly when its plan has one slice" in {
    // The TCP channel sends a single-slice task without making its plan: the two must agree.
    forAll(genPlanInput) { in =>
      in.planner.singleSlice(in.op, in.lengthBytes) shouldBe (in.plan.count() == 1)
    }
  }

  it should "refuse non-positive lengths and settings" in {
    forAll(genPlanInput, Gen.chooseNum(Long.MinValue, 0L)) { (in, bad) =>
      an[IllegalArgumentException] should be thrownBy in.planner.plan(in.op, bad)
      an[IllegalArgumentException] should be thrownBy in.planner.singleSlice(in.op, bad)
      an[IllegalArgumentException] should be thrownBy new SlicePlanner(bad, in.maxReadSlices, in.maxWriteSlices)
      val badCap = math.max(Int.MinValue.toLong, bad).toInt
      an[IllegalArgumentException] should be thrownBy new SlicePlanner(in.baseBlockBytes, badCap, in.maxWriteSlices)
      an[IllegalArgumentException] should be thrownBy new SlicePlanner(in.baseBlockBytes, in.maxReadSlices, badCap)
    }
  }
}
