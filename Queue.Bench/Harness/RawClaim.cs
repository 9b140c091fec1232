using Queue.Core.Claims;

namespace Queue.Bench.Harness;

/// <summary>
/// The database's own limit: one claim transaction of the real Core engine (one item, no HTTP), as the claim and
/// rewrite benchmarks both measure it.
/// </summary>
public static class RawClaim
{
    /// <summary>Claims one item in its own READ COMMITTED transaction; fails loudly when the lanes ran dry.</summary>
    public static Task OnceAsync(ClaimEngine engine, string[] tasks, string worker) => TakeAsync(engine, tasks, worker);

    /// <summary>As <see cref="OnceAsync"/>, and returns the item taken, for a caller that finishes it.</summary>
    public static async Task<IReadOnlyList<TakenItem>> TakeAsync(ClaimEngine engine, string[] tasks, string worker)
    {
        var taken = await TryTakeAsync(engine, tasks, worker);
        if (taken.Count == 0)
        {
            throw new InvalidOperationException($"the {string.Join(',', tasks)} lanes ran dry: seed more items");
        }
        return taken;
    }

    /// <summary>As <see cref="TakeAsync"/>, for a caller that counts empty answers itself.</summary>
    public static async Task<IReadOnlyList<TakenItem>> TryTakeAsync(ClaimEngine engine, string[] tasks, string worker)
    {
        var now = DateTime.UtcNow;
        return (await engine.ClaimAsync([new ClaimOrder(tasks, [new ClaimSlot(worker, now.AddMinutes(30), false)])], CancellationToken.None))[0];
    }
}
