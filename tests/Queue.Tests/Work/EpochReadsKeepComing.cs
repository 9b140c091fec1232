using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>
/// Reads of the claim epoch every millisecond until disposed, as a busy filter's handouts send them, so that the last
/// read is always fresh, and often one sent just before a writer's commit (docs/DESIGN.md "Claim-ahead that keeps the
/// policy").
/// </summary>
internal sealed class EpochReadsKeepComing : IAsyncDisposable
{
    private readonly CancellationTokenSource stop = new();
    private readonly Task loop;

    public EpochReadsKeepComing(ClaimEpoch epochs) => loop = Task.Run(async () =>
    {
        while (!stop.IsCancellationRequested)
        {
            await epochs.ReadAsync();
            await Task.Delay(1);
        }
    });

    public async ValueTask DisposeAsync()
    {
        await stop.CancelAsync();
        await loop;
        stop.Dispose();
    }
}
