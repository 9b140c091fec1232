namespace Queue.Core;

/// <summary>
/// The claim epoch's lease (docs/DESIGN.md "Claim-ahead that keeps the policy"). A handout from the claim-ahead buffer
/// may use an epoch read sent at most <see cref="Freshness"/> before it (<see cref="Claims.ClaimEpoch"/>), and every
/// writer that moves the epoch (a cancel, the Admin's job actions) answers only <see cref="Settle"/> after its commit.
/// From that answer on, every read a handout uses, in any process, was sent after the commit and sees it: what the
/// writer took back or outranked is never handed out after it answered. Here, below Jobs, Admin and Claims, because all
/// three keep the two sides of the one promise.
/// </summary>
public static class EpochLease
{
    /// <summary>How long before a handout the epoch read it uses may have been sent.</summary>
    public static readonly TimeSpan Freshness = TimeSpan.FromMilliseconds(20);

    /// <summary>How long a writer that moved the epoch waits after its commit before it answers: past <see cref="Freshness"/>.</summary>
    public static readonly TimeSpan Settle = Freshness + TimeSpan.FromMilliseconds(5);

    /// <summary>
    /// The writer's wait, after a commit that moved the epoch. Real time, not a clock the caller can move: the reads'
    /// ages are measured by Stopwatch in every process.
    /// </summary>
    public static Task SettleAsync(CancellationToken ct) => Task.Delay(Settle, ct);
}
