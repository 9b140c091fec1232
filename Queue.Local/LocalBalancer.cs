using System.Diagnostics;
using System.Globalization;

namespace Queue.Local;

/// <summary>
/// HAProxy (Debian's) in front of local Api processes, as scripts/cluster.sh runs it: round robin, each backend checked
/// on /healthz every 500 ms, a refused connection retried on another backend. For the cluster tests and benchmark.
/// </summary>
public sealed class LocalBalancer : IAsyncDisposable
{
    private readonly Process process;
    private readonly string directory;

    private LocalBalancer(Process process, string directory, Uri url)
    {
        this.process = process;
        this.directory = directory;
        Url = url;
    }

    public Uri Url { get; }

    private static readonly string[] Candidates = ["/usr/sbin/haproxy", "/usr/bin/haproxy"];

    public static async Task<LocalBalancer> StartAsync(IEnumerable<string> backendUrls, CancellationToken ct = default)
    {
        var binary = Candidates.FirstOrDefault(File.Exists)
            ?? throw new InvalidOperationException("haproxy is not installed: scripts/ensure-packages.sh haproxy (./test.sh does it)");
        var port = PrivateMariaDb.FreePort();
        var directory = System.IO.Directory.CreateTempSubdirectory("queue-haproxy-").FullName;
        var config = Path.Combine(directory, "haproxy.cfg");
        await File.WriteAllTextAsync(config, string.Join('\n',
        [
            "global", "  maxconn 8192",
            "defaults", "  mode http", "  option http-keep-alive", "  timeout connect 2s", "  timeout client 120s", "  timeout server 70s",
            "  retries 2", "  option redispatch", "  retry-on conn-failure",
            "frontend api", string.Create(CultureInfo.InvariantCulture, $"  bind 127.0.0.1:{port}"), "  default_backend api",
            "backend api", "  balance roundrobin", "  option httpchk GET /healthz", "  default-server check inter 500ms fall 1 rise 1",
            .. backendUrls.Select((u, i) => string.Create(CultureInfo.InvariantCulture, $"  server api{i} {new Uri(u).Authority}")),
            "",
        ]), ct);
        var psi = new ProcessStartInfo(binary) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in new[] { "-db", "-f", config })
        {
            psi.ArgumentList.Add(a);
        }
        var balancer = new LocalBalancer(Process.Start(psi)!, directory, new Uri(string.Create(CultureInfo.InvariantCulture, $"http://127.0.0.1:{port}")));
        using var probe = new HttpClient { BaseAddress = balancer.Url, Timeout = TimeSpan.FromSeconds(2) };
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (true)
        {
            try
            {
                using var r = await probe.GetAsync(new Uri("/healthz", UriKind.Relative), ct);
                if (r.IsSuccessStatusCode)
                {
                    return balancer;
                }
            }
            catch (HttpRequestException) when (DateTime.UtcNow < deadline)
            {
            }
            if (DateTime.UtcNow >= deadline || balancer.process.HasExited)
            {
                await balancer.DisposeAsync();
                throw new InvalidOperationException("HAProxy did not start answering within 30 s");
            }
            await Task.Delay(100, ct);
        }
    }

    public async ValueTask DisposeAsync()
    {
        if (!process.HasExited)
        {
            process.Kill(entireProcessTree: true);
            await process.WaitForExitAsync();
        }
        process.Dispose();
        System.IO.Directory.Delete(directory, recursive: true);
    }
}
