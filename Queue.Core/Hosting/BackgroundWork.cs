using Microsoft.Extensions.Hosting;

namespace Queue.Core.Hosting;

/// <summary>Work a component runs in the background that the host must let finish when it stops.</summary>
public interface IDrainable
{
    /// <summary>Completes when the component has nothing queued or in flight (or <paramref name="ct"/> gives up).</summary>
    Task DrainAsync(CancellationToken ct);
}

/// <summary>
/// Every group-commit queue and background writer of the process: a clean shutdown waits for their transactions in
/// flight, so a caller that got no answer yet is not left with a write that may or may not have landed.
/// </summary>
public sealed class BackgroundWork
{
    private readonly Lock gate = new();
    private readonly List<IDrainable> tracked = [];

    public void Track(IDrainable work)
    {
        lock (gate)
        {
            tracked.Add(work);
        }
    }

    public Task DrainAsync(CancellationToken ct)
    {
        IDrainable[] all;
        lock (gate)
        {
            all = [.. tracked];
        }
        return Task.WhenAll(all.Select(w => w.DrainAsync(ct)));
    }
}

/// <summary>Stops <see cref="BackgroundWork"/> with the host.</summary>
public sealed class BackgroundWorkHost(BackgroundWork work) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => work.DrainAsync(cancellationToken);
}
