package io.orbite.engine.slicing

import io.orbite.engine.Op
import org.scalacheck.Gen

/** Generators shared by the slicing specs. */
object SlicingGens {
  val MaxLength: Long = 1L << 40

  /** One planning problem: the planner's settings and the request it plans. */
  final case class PlanInput(op: Op, lengthBytes: Long, baseBlockBytes: Long, maxReadSlices: Int, maxWriteSlices: Int) {
    def planner: SlicePlanner = new SlicePlanner(baseBlockBytes, maxReadSlices, maxWriteSlices)
    def plan: SlicePlan = planner.plan(op, lengthBytes)
    def cap: Int = if (op == Op.READ) maxReadSlices else maxWriteSlices
  }

  /** Base blocks as configured: powers of two from 4 KiB to 64 MiB. */
  val genBaseBlock: Gen[Long] = Gen.choose(12, 26).map(1L << _)

  val genCap: Gen[Int] = Gen.frequency(1 -> Gen.const(1), 1 -> Gen.const(1024), 6 -> Gen.chooseNum(1, 1024))

  /** Lengths of every scale, and lengths near multiples of the base block, where folding decides. */
  def genLength(base: Long): Gen[Long] = Gen.frequency(
    3 -> Gen.chooseNum(1L, MaxLength),
    2 -> Gen.choose(0, 40).flatMap(bits => Gen.chooseNum(1L, 1L << bits)),
    2 -> (for {
      k <- Gen.chooseNum(1L, 4096L)
      delta <- Gen.chooseNum(-2L, 2L)
    } yield math.min(MaxLength, math.max(1L, k * base + delta))),
    1 -> Gen.chooseNum(1L, base))

  val genPlanInput: Gen[PlanInput] = for {
    op <- Gen.oneOf(Op.READ, Op.WRITE)
    base <- genBaseBlock
    length <- genLength(base)
    maxRead <- genCap
    maxWrite <- genCap
  } yield PlanInput(op, length, base, maxRead, maxWrite)

  /** Plans as the planner makes them. */
  val genPlannedPlan: Gen[SlicePlan] = genPlanInput.map(_.plan)

  /**
   * Any well-formed plan with small numbers, not only the planner's: `count` blocks of `block`
   * bytes, the last one taking a tail of 0 to block-1 extra bytes (or a single short slice).
   */
  val genSmallPlan: Gen[SlicePlan] = for {
    block <- Gen.chooseNum(1L, 5000L)
    count <- Gen.frequency(1 -> Gen.const(1), 4 -> Gen.chooseNum(1, 300))
    tail <- Gen.chooseNum(0L, block - 1)
    short <- Gen.chooseNum(1L, block)
  } yield
    if (count == 1 && short < block) new SlicePlan(short, block, 1)
    else new SlicePlan(count * block + tail, block, count)

  val genPlan: Gen[SlicePlan] = Gen.frequency(3 -> genPlannedPlan, 1 -> genSmallPlan)

  /** Slices of `plan` as (offset, length). */
  def slices(plan: SlicePlan): IndexedSeq[(Long, Long)] =
    (0 until plan.count()).map(i => (plan.offset(i), plan.length(i)))

  /** Maximal runs of equal lanes, as (lane, number of slices). */
  def runs(lanes: Seq[Int]): List[(Int, Int)] =
    lanes.foldLeft(List.empty[(Int, Int)]) {
      case ((lane, n) :: rest, l) if l == lane => (lane, n + 1) :: rest
      case (acc, l) => (l, 1) :: acc
    }.reverse
}
