using System.Collections.Concurrent;
using System.Diagnostics;
using Queue.Local;

namespace Queue.Bench.Soak;

/// <summary>
/// The faults a soak injects. Without a proxy: the Api killed at a quarter of the run and mariadbd at half. With one
/// (<c>--faults</c>): at random, seeded intervals, a COMMIT's answer cut after the server committed, every connection
/// reset, a few seconds of delay on every relayed chunk, a few seconds of refused connections and the Api killed, and
/// mariadbd killed once, at a random point between a third and two thirds of the run. The first faults go through
/// every kind once, so that even a short run sees each of them.
/// </summary>
public sealed class SoakChaos(SoakWorld world, TimeSpan duration, Random random, Stopwatch clock, Action<string> onEvent)
{
    public const string CommitCuts = "commit answers cut";
    public const string Resets = "connection resets";
    public const string Delays = "delays";
    public const string Refusals = "refusals";
    public const string ApiKills = "Api kills";
    public const string DatabaseRestarts = "database restarts";

    private readonly ConcurrentDictionary<string, int> counts = new();

    /// <summary>How many faults of each kind happened; commit cuts as the proxy made them, not as they were armed.</summary>
    public IReadOnlyDictionary<string, int> Counts
    {
        get
        {
            var all = new Dictionary<string, int>(counts);
            if (world.Proxy is { } proxy)
            {
                all[CommitCuts] = proxy.Cuts;
            }
            return all;
        }
    }

    public Task RunAsync(CancellationToken ct) => world.Proxy is { } proxy ? RandomFaultsAsync(proxy, ct) : TwoKillsAsync(ct);

    private async Task TwoKillsAsync(CancellationToken ct)
    {
        try
        {
            await Task.Delay(duration / 4, ct);
            await KillApiAsync();
            await Task.Delay(duration / 4, ct);
            await RestartDatabaseAsync();
            await Task.Delay(Timeout.InfiniteTimeSpan, ct);
        }
        catch (OperationCanceledException)
        {
        }
    }

    private async Task RandomFaultsAsync(FaultProxy proxy, CancellationToken ct)
    {
        // Apart enough that the service recovers between faults, often enough that a 1-minute run sees dozens.
        var mean = TimeSpan.FromSeconds(Math.Clamp(duration.TotalSeconds / 60, 1.5, 10));
        var databaseAt = duration * (1 / 3.0 + random.NextDouble() / 3);
        string[] kinds = [CommitCuts, Resets, Delays, Refusals, ApiKills];
        string[] weighted = [CommitCuts, CommitCuts, CommitCuts, CommitCuts, Resets, Resets, Resets, Delays, Delays, Refusals, ApiKills];
        var firstRound = kinds.OrderBy(_ => random.Next()).ToArray();
        try
        {
            for (var n = 0; !ct.IsCancellationRequested; n++)
            {
                await Task.Delay(mean * (0.5 + random.NextDouble()), ct);
                if (!counts.ContainsKey(DatabaseRestarts) && clock.Elapsed >= databaseAt)
                {
                    await RestartDatabaseAsync();
                    continue;
                }
                var kind = n < firstRound.Length ? firstRound[n] : weighted[random.Next(weighted.Length)];
                switch (kind)
                {
                    case CommitCuts:
                        proxy.CutAfterCommit(1);
                        Event("cut the next COMMIT's answer");
                        break;
                    case Resets:
                        proxy.ResetAll();
                        Count(Resets, "reset every connection");
                        break;
                    case Delays:
                        var ms = random.Next(20, 150);
                        var length = TimeSpan.FromSeconds(1 + random.NextDouble() * 2);
                        Count(Delays, $"delay every relayed chunk {ms} ms for {length.TotalSeconds:F1} s");
                        proxy.Delay(ms);
                        await Task.Delay(length, CancellationToken.None);
                        proxy.Delay(0);
                        break;
                    case Refusals:
                        var refusing = TimeSpan.FromSeconds(0.5 + random.NextDouble() * 1.5);
                        Count(Refusals, $"refuse new connections for {refusing.TotalSeconds:F1} s");
                        proxy.Refusing = true;
                        await Task.Delay(refusing, CancellationToken.None);
                        proxy.Refusing = false;
                        break;
                    default:
                        await KillApiAsync();
                        break;
                }
            }
        }
        catch (OperationCanceledException)
        {
        }
        finally
        {
            // The drain and the reconciliation run on a healthy path.
            proxy.CutAfterCommit(0);
            proxy.Delay(0);
            proxy.Refusing = false;
        }
    }

    private async Task KillApiAsync()
    {
        Count(ApiKills, "kill -9 Queue.Api, restart");
        await world.RestartApiAsync();
    }

    private async Task RestartDatabaseAsync()
    {
        Count(DatabaseRestarts, "kill -9 mariadbd, restart");
        await world.RestartDatabaseAsync();
    }

    private void Count(string kind, string text)
    {
        counts.AddOrUpdate(kind, 1, (_, c) => c + 1);
        Event(text);
    }

    private void Event(string text) => onEvent($"{clock.Elapsed.TotalSeconds:F0}s {text}");
}
