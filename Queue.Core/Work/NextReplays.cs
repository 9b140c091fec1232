using System.Collections.Concurrent;
using Queue.Core.Claims;

namespace Queue.Core.Work;

/// <summary>
/// The answers of recent <c>POST /next</c> calls that carried a <c>requestId</c>: a worker that never received its 200
/// (a dropped connection) sends the call again with the same id and gets the same leases back, instead of new ones
/// while the first expire as failed attempts. An answer is kept while its leases live, at most <see cref="Keep"/>; an
/// empty one is not kept, so a retry after a 204 looks for work again. A retry that arrives while the first call still
/// runs waits for its answer. Per process: a retry that reaches another Api process claims afresh (docs/DESIGN.md
/// "Retried claims").
/// </summary>
public sealed class NextReplays(TimeProvider clock)
{
    public static readonly TimeSpan Keep = TimeSpan.FromMinutes(2);

    /// <summary>Answers kept at most; past it the oldest go first. A few MB at most.</summary>
    private const int MaxKept = 20_000;

    private readonly ConcurrentDictionary<string, Entry> kept = new(StringComparer.Ordinal);

    /// <summary>The answer of the call named <paramref name="id"/> (scoped by the caller), claiming with <paramref name="claim"/> the first time.</summary>
    public async Task<IReadOnlyList<TakenItem>> RunAsync(string id, TimeSpan lease, Func<Task<IReadOnlyList<TakenItem>>> claim)
    {
        var now = clock.GetUtcNow();
        var mine = new Entry(now + (lease < Keep ? lease : Keep));
        var entry = kept.GetOrAdd(id, mine);
        if (!ReferenceEquals(entry, mine))
        {
            if (entry.Until > now)
            {
                return await entry.Answer.Task;
            }
            kept.TryUpdate(id, mine, entry);
            entry = kept.GetOrAdd(id, mine);
            if (!ReferenceEquals(entry, mine))
            {
                return await entry.Answer.Task;
            }
        }
        Prune(now);
        try
        {
            var items = await claim();
            if (items.Count == 0)
            {
                kept.TryRemove(KeyValuePair.Create(id, mine));
            }
            mine.Answer.TrySetResult(items);
            return items;
        }
        catch (Exception ex)
        {
            // Nothing was handed out: a retry claims afresh, and whoever waited for this call gets its error.
            kept.TryRemove(KeyValuePair.Create(id, mine));
            mine.Answer.TrySetException(ex);
            _ = mine.Answer.Task.Exception;
            throw;
        }
    }

    private void Prune(DateTimeOffset now)
    {
        if (kept.Count < MaxKept / 2)
        {
            return;
        }
        foreach (var (id, entry) in kept)
        {
            if (entry.Until <= now)
            {
                kept.TryRemove(KeyValuePair.Create(id, entry));
            }
        }
        if (kept.Count >= MaxKept)
        {
            foreach (var (id, entry) in kept.OrderBy(e => e.Value.Until).Take(kept.Count - (MaxKept / 2)))
            {
                kept.TryRemove(KeyValuePair.Create(id, entry));
            }
        }
    }

    private sealed class Entry(DateTimeOffset until)
    {
        public DateTimeOffset Until { get; } = until;

        public TaskCompletionSource<IReadOnlyList<TakenItem>> Answer { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
