using System.Net;

namespace Queue.Client;

/// <summary>Worker endpoints: claim, fetch the document, complete, fail, extend.</summary>
public sealed partial class QueueClient
{
    /// <summary>
    /// POST /next: up to <paramref name="max"/> items, long-polling up to <paramref name="wait"/> (0 to 30 s); empty when
    /// nothing came.
    /// </summary>
    public async Task<IReadOnlyList<LeasedItem>> ClaimAsync(IReadOnlyList<string>? tasks, int max = 1, TimeSpan wait = default,
        TimeSpan? lease = null, string? worker = null, CancellationToken ct = default)
    {
        var body = Next(tasks, max, wait, lease, worker);
        using var response = await SendAsync(() => Request(HttpMethod.Post, "next", Json(body, QueueJsonContext.Default.NextBody)), ct);
        if (response.StatusCode == HttpStatusCode.NoContent)
        {
            return [];
        }
        await EnsureSuccessAsync(response, ct);
        return (await ReadJsonAsync(response, QueueJsonContext.Default.NextAnswer, ct)).Items;
    }

    /// <summary>GET /items/{id}/document under the item's lease, streamed.</summary>
    public Task<Stream> OpenItemDocumentAsync(LeasedItem item, CancellationToken ct = default) =>
        OpenStreamAsync(() =>
        {
            var request = Request(HttpMethod.Get, $"items/{Id(item.Id)}/document");
            request.Headers.Add("Lease-Token", item.LeaseToken);
            return request;
        }, ct);

    /// <summary>Completes the item; a <see cref="QueueApiException"/> with <c>IsStaleLease</c> means the lease was lost.</summary>
    public Task CompleteAsync(LeasedItem item, CancellationToken ct = default) =>
        SendNoContentAsync(() => Request(HttpMethod.Post, $"items/{Id(item.Id)}/complete", Json(new LeaseBody(item.LeaseToken), QueueJsonContext.Default.LeaseBody)), ct);

    /// <summary>Fails the item with <paramref name="error"/> (cut to the contract's 4,000 characters, keeping the end).</summary>
    public Task FailAsync(LeasedItem item, string error, bool retry = true, CancellationToken ct = default)
    {
        var body = new FailBody(item.LeaseToken, error.Length > 4000 ? error[^4000..] : error, retry);
        return SendNoContentAsync(() => Request(HttpMethod.Post, $"items/{Id(item.Id)}/fail", Json(body, QueueJsonContext.Default.FailBody)), ct);
    }

    /// <summary>
    /// Completes the item and claims up to <paramref name="max"/> items in the same exchange (CONTRACT v1.3): one round
    /// trip instead of <see cref="CompleteAsync"/> and <see cref="ClaimAsync"/>. The completion is recorded when this
    /// returns; the list is empty when nothing was claimable within <paramref name="wait"/> (or the claim part was busy).
    /// A refused completion (stale lease: <c>IsStaleLease</c>) throws <see cref="QueueApiException"/> and claims nothing.
    /// </summary>
    public Task<IReadOnlyList<LeasedItem>> CompleteAndClaimAsync(LeasedItem item, IReadOnlyList<string>? tasks, int max = 1,
        TimeSpan wait = default, TimeSpan? lease = null, string? worker = null, CancellationToken ct = default)
    {
        var body = new LeaseBody(item.LeaseToken, Next(tasks, max, wait, lease, worker));
        return ReadItemsAsync(() => Request(HttpMethod.Post, $"items/{Id(item.Id)}/complete", Json(body, QueueJsonContext.Default.LeaseBody)), ct);
    }

    /// <summary>
    /// Fails the item (as <see cref="FailAsync"/>) and claims up to <paramref name="max"/> items in the same exchange
    /// (CONTRACT v1.3), as <see cref="CompleteAndClaimAsync"/> does.
    /// </summary>
    public Task<IReadOnlyList<LeasedItem>> FailAndClaimAsync(LeasedItem item, string error, bool retry, IReadOnlyList<string>? tasks, int max = 1,
        TimeSpan wait = default, TimeSpan? lease = null, string? worker = null, CancellationToken ct = default)
    {
        var body = new FailBody(item.LeaseToken, error.Length > 4000 ? error[^4000..] : error, retry, Next(tasks, max, wait, lease, worker));
        return ReadItemsAsync(() => Request(HttpMethod.Post, $"items/{Id(item.Id)}/fail", Json(body, QueueJsonContext.Default.FailBody)), ct);
    }

    /// <summary>A /next body; its <c>RequestId</c> is made once, so every retry of the call carries the same one.</summary>
    private static NextBody Next(IReadOnlyList<string>? tasks, int max, TimeSpan wait, TimeSpan? lease, string? worker) =>
        new(worker, tasks, max, (int)Math.Ceiling(wait.TotalSeconds), (int)(lease ?? TimeSpan.FromMinutes(5)).TotalSeconds, Guid.NewGuid().ToString("N"));

    private async Task<IReadOnlyList<LeasedItem>> ReadItemsAsync(Func<HttpRequestMessage> build, CancellationToken ct)
    {
        using var response = await SendAsync(build, ct);
        await EnsureSuccessAsync(response, ct);
        return (await ReadJsonAsync(response, QueueJsonContext.Default.NextAnswer, ct)).Items;
    }

    /// <summary>Extends the lease to <paramref name="lease"/> from now; returns the new expiry.</summary>
    public async Task<DateTimeOffset> ExtendAsync(LeasedItem item, TimeSpan lease, CancellationToken ct = default)
    {
        var body = new ExtendBody(item.LeaseToken, (int)lease.TotalSeconds);
        var answer = await ReadAsync(() => Request(HttpMethod.Post, $"items/{Id(item.Id)}/extend", Json(body, QueueJsonContext.Default.ExtendBody)),
            QueueJsonContext.Default.ExtendAnswer, ct);
        return answer.LeaseExpiresAt;
    }

    /// <summary>
    /// Works items of <paramref name="tasks"/> with up to <paramref name="concurrency"/> handlers at once until
    /// <paramref name="ct"/> is cancelled (or <see cref="WorkOptions.IdleExit"/> passes without work): long-polls
    /// /next, extends each lease while its handler runs, completes when the handler returns and fails with the
    /// exception's message when it throws. On cancellation it claims nothing more, lets running handlers finish
    /// within <see cref="WorkOptions.ShutdownGrace"/>, and releases (fails for retry) those that do not.
    /// </summary>
    public Task WorkAsync(IReadOnlyList<string> tasks, Func<WorkItem, CancellationToken, Task> handler, int concurrency, CancellationToken ct,
        WorkOptions? options = null) =>
        new QueueWorker(this, tasks, handler, concurrency, options ?? new WorkOptions()).RunAsync(ct);
}
