using System.Diagnostics;
using Queue.Client;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Client;

/// <summary>The client behind a balancer that silently drops idle connections: at most one retry per call, never a stall.</summary>
[TakesAbout(18)]
public sealed class IdleConnectionTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    private static readonly TimeSpan ProxyIdle = TimeSpan.FromMilliseconds(300);

    [Fact]
    public async Task Calls_over_connections_a_proxy_dropped_while_idle_each_need_at_most_one_retry()
    {
        await using var proxy = new IdleDroppingProxy(fx.Port, ProxyIdle);
        proxy.Start();
        var retries = 0;
        // A pool idle timeout longer than the proxy's, so pooled connections really are dead when reused.
        using var client = fx.Client((await fx.CustomerAsync("idle")).Key, proxy.BaseAddress, o =>
        {
            o.PooledConnectionIdleTimeout = TimeSpan.FromMinutes(5);
            o.OnRetry = _ => Interlocked.Increment(ref retries);
        });
        using var worker = fx.Client(fx.WorkerKey, proxy.BaseAddress, o => o.PooledConnectionIdleTimeout = TimeSpan.FromMinutes(5));
        var job = await client.CreateJobAsync(new NewJob("idle", ["idle"], Open: true));

        // The waits below are the scenario, not a guess at a duration: each lets the proxy drop the idle connections.
        for (var round = 0; round < 6; round++)
        {
            await Task.Delay(ProxyIdle * 2);
            var before = Volatile.Read(ref retries);
            var watch = Stopwatch.StartNew();
            await client.UploadAsync(job.Id, $"r{round}.txt", () => new MemoryStream("payload"u8.ToArray()), "text/plain");
            await Task.Delay(ProxyIdle * 2);
            var status = await client.GetJobAsync(job.Id);
            Assert.Equal(round + 1, status.Documents);
            Assert.InRange(Volatile.Read(ref retries) - before, 0, 2); // one per call at most: the upload and the status
            Assert.True(watch.Elapsed < ProxyIdle * 2 + TimeSpan.FromSeconds(3), $"round {round} took {watch.Elapsed}");
        }
        await client.CloseJobAsync(job.Id);
        await Task.Delay(ProxyIdle * 2);
        var items = await worker.ClaimAsync(["idle"], max: 10);
        await Task.Delay(ProxyIdle * 2);
        foreach (var item in items)
        {
            await worker.CompleteAsync(item);
        }
        Assert.Equal(6, items.Count);
        Assert.True(proxy.Drops >= 6, $"the proxy should have dropped idle connections, dropped {proxy.Drops}");
    }

    [Fact]
    public async Task A_pool_idle_timeout_below_the_proxys_means_no_call_meets_a_dropped_connection()
    {
        // The pool sweeps idle connections on a timer of about a second, so the gaps here are longer than that.
        var proxyIdle = TimeSpan.FromMilliseconds(1500);
        await using var proxy = new IdleDroppingProxy(fx.Port, proxyIdle);
        proxy.Start();
        var retries = 0;
        using var client = fx.Client((await fx.CustomerAsync("fresh")).Key, proxy.BaseAddress, o =>
        {
            o.PooledConnectionIdleTimeout = TimeSpan.FromMilliseconds(250);
            o.OnRetry = _ => Interlocked.Increment(ref retries);
        });
        var job = await client.CreateJobAsync(new NewJob("fresh", ["fresh"], Open: true));
        for (var round = 0; round < 3; round++)
        {
            await Task.Delay(TimeSpan.FromSeconds(2.5)); // the scenario: idle past the proxy's timeout
            await client.GetJobAsync(job.Id);
        }
        Assert.Equal(0, retries);
        Assert.Equal(0, proxy.Drops);
    }
}
