package io.orbite.engine.slicing

import io.orbite.engine.PropertySupport
import io.orbite.engine.slicing.SlicingGens._
import org.scalacheck.Gen
import org.scalatest.flatspec.AnyFlatSpec
import scala.collection.mutable.ArrayBuffer

/**
 * Frames from slices and lanes: consecutive slices on one lane share a frame, no frame is longer
 * than maxFrameBytes, and every byte of the task is in exactly one frame, in order.
 */
class FrameSplitterSpec extends AnyFlatSpec with PropertySupport {
  import FrameSplitterSpec._

  override protected def cases: Int = 500

  /** Lanes as LaneSelector gives them, for a random lane set. */
  private def genSelectedLanes(plan: SlicePlan): Gen[Array[Int]] = for {
    n <- Gen.choose(1, 64)
    charged <- Gen.listOfN(n, Gen.chooseNum(0L, 1L << 36))
    bandwidth <- Gen.listOfN(n, Gen.choose(1e8, 1e11))
    rotation <- Gen.choose(0, 1000)
  } yield LaneSelector.assign(plan, charged.toArray, bandwidth.toArray, rotation)

  /** Any lane array, including a lane that comes back after another (which LaneSelector never does). */
  private def genAnyLanes(plan: SlicePlan): Gen[Array[Int]] = for {
    n <- Gen.choose(1, 4)
    stickiness <- Gen.choose(0.0, 1.0)
    seed <- Gen.long
  } yield {
    val rnd = new scala.util.Random(seed)
    val out = new Array[Int](plan.count())
    out(0) = rnd.nextInt(n)
    for (i <- 1 until out.length) out(i) = if (rnd.nextDouble() < stickiness) out(i - 1) else rnd.nextInt(n)
    out
  }

  /** Frame caps from 1 byte to unlimited, bounded so that a case has at most a few thousand frames. */
  private def genMaxFrame(plan: SlicePlan): Gen[Long] = {
    val length = plan.lengthBytes()
    val block = plan.blockBytes()
    val aroundBlock = Seq(block, block - 1, block + 1, 2 * block, block / 2, block / 3).filter(_ > 0)
      .filter(m => length / m <= 20000)
    Gen.frequency(
      4 -> (for {
        divisor <- Gen.chooseNum(1L, 4000L)
        jitter <- Gen.chooseNum(-3L, 3L)
      } yield math.max(1L, length / divisor + jitter)),
      2 -> (if (aroundBlock.isEmpty) Gen.const(block) else Gen.oneOf(aroundBlock)),
      // Large caps, up to the overflow boundary (larger ones: the regression property below).
      1 -> Gen.oneOf(length, length - 1, length + 1, 1L << 62, Long.MaxValue - length).map(math.max(1L, _)),
      1 -> (if (length <= 20000) Gen.chooseNum(1L, 16L) else Gen.const(length)))
  }

  private val genInput: Gen[Input] = for {
    plan <- genPlan
    lanes <- Gen.frequency(1 -> genSelectedLanes(plan), 1 -> genAnyLanes(plan))
    maxFrame <- genMaxFrame(plan)
  } yield Input(plan, lanes, maxFrame)

  private def split(in: Input): (Int, IndexedSeq[Frame]) = {
    val frames = ArrayBuffer.empty[Frame]
    val returned = FrameSplitter.split(in.plan, in.laneOfSlice, in.maxFrameBytes, (lane, offset, length) =>
      frames += Frame(lane, offset, length))
    (returned, frames.toIndexedSeq)
  }

  "FrameSplitter" should "return the number of frames it emitted" in {
    forAll(genInput) { in =>
      val (returned, frames) = split(in)
      returned shouldBe frames.size
    }
  }

  it should "cover every byte of the task exactly once, in order, with frames of 1..maxFrameBytes" in {
    forAll(genInput) { in =>
      val (_, frames) = split(in)
      var next = 0L
      for (f <- frames) {
        f.offset shouldBe next
        f.length should (be > 0L and be <= in.maxFrameBytes)
        next = f.offset + f.length
      }
      next shouldBe in.plan.lengthBytes()
    }
  }

  it should "carry each byte on the lane of the slice it belongs to" in {
    forAll(genInput) { in =>
      val (_, frames) = split(in)
      val plan = in.plan
      // Walk slices and frames together: a frame may only overlap slices of its own lane.
      var s = 0
      for (f <- frames) {
        while (plan.offset(s) + plan.length(s) <= f.offset) s += 1
        var t = s
        while (t < plan.count() && plan.offset(t) < f.offset + f.length) {
          withClue(s"frame $f overlaps slice $t: ")(f.lane shouldBe in.laneOfSlice(t))
          t += 1
        }
      }
    }
  }

  it should "start a new frame on the same lane only where a run was cut at maxFrameBytes" in {
    forAll(genInput) { in =>
      val (_, frames) = split(in)
      frames.sliding(2).filter(_.size == 2).foreach { case Seq(a, b) =>
        if (a.lane == b.lane) withClue(s"$a then $b: ")(a.length shouldBe in.maxFrameBytes)
      }
    }
  }

  it should "use the fewest frames: one per maxFrameBytes of each run of same-lane slices, rounded up" in {
    forAll(genInput) { in =>
      val (returned, _) = split(in)
      var i = 0
      val expected = runs(in.laneOfSlice.toSeq).map { case (_, n) =>
        val bytes = (i until i + n).map(in.plan.length).sum
        i += n
        (bytes - 1) / in.maxFrameBytes + 1 // ceil(bytes / maxFrameBytes), without overflow
      }.sum
      returned.toLong shouldBe expected
    }
  }

  it should "send a run of one lane as a single frame when maxFrameBytes is at least the task" in {
    forAll(genPlan, Gen.choose(0, 63)) { (plan, lane) =>
      val frames = ArrayBuffer.empty[Frame]
      val n = FrameSplitter.split(plan, Array.fill(plan.count())(lane), plan.lengthBytes(), (l, o, len) =>
        frames += Frame(l, o, len))
      n shouldBe 1
      frames shouldBe Seq(Frame(lane, 0L, plan.lengthBytes()))
    }
  }

  // Regression: the splitter once advanced by maxFrameBytes, which overflowed for caps near
  // Long.MaxValue (frames at negative offsets, never ending).
  it should "cope with any maxFrameBytes up to Long.MaxValue, as if there were no limit" in {
    val gen = for {
      plan <- genPlan
      lanes <- genAnyLanes(plan)
      maxFrame <- Gen.chooseNum(Long.MaxValue - plan.lengthBytes(), Long.MaxValue)
    } yield Input(plan, lanes, maxFrame)
    forAll(gen) { in =>
      val frames = ArrayBuffer.empty[Frame]
      val bound = in.plan.count()
      FrameSplitter.split(in.plan, in.laneOfSlice, in.maxFrameBytes, (lane, offset, length) => {
        if (frames.size == bound) fail(s"more frames than slices; so far: ${frames.take(4)} ...")
        frames += Frame(lane, offset, length)
      })
      frames.map(_.lane) shouldBe runs(in.laneOfSlice.toSeq).map(_._1)
      frames.map(_.length).sum shouldBe in.plan.lengthBytes()
    }
  }

  it should "refuse a maxFrameBytes <= 0" in {
    forAll(genPlan, Gen.chooseNum(Long.MinValue, 0L)) { (plan, bad) =>
      an[IllegalArgumentException] should be thrownBy
        FrameSplitter.split(plan, new Array[Int](plan.count()), bad, (_, _, _) => ())
    }
  }
}

object FrameSplitterSpec {
  final case class Frame(lane: Int, offset: Long, length: Long)

  final case class Input(plan: SlicePlan, laneOfSlice: Array[Int], maxFrameBytes: Long) {
    override def toString: String =
      s"Input($plan, lanes ${runs(laneOfSlice.toSeq).map { case (l, n) => s"$l x$n" }.mkString("[", ", ", "]")}, " +
        s"maxFrameBytes $maxFrameBytes)"
  }
}
