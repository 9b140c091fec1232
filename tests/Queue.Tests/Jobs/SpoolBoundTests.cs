using System.Net;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>Uploads too large to group are spooled to disk first, within Jobs:MaxSpoolBytes for the whole process.</summary>
public sealed class SpoolBoundTests : DatabaseFixture, IAsyncLifetime
{
    private const int Bound = 1024 * 1024;

    private readonly string spool = Path.Combine(Path.GetTempPath(), "queue-spool-" + Guid.NewGuid().ToString("N")[..12]);
    private ApiFactory api = null!;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        api = new ApiFactory(ConnectionString, new Dictionary<string, string?>
        {
            ["Jobs:SpoolDirectory"] = spool,
            ["Jobs:MaxSpoolBytes"] = Bound.ToString(System.Globalization.CultureInfo.InvariantCulture),
        });
    }

    public override async Task DisposeAsync()
    {
        await api.DisposeAsync();
        await base.DisposeAsync();
        if (Directory.Exists(spool))
        {
            Directory.Delete(spool, recursive: true);
        }
    }

    [Fact]
    public async Task An_upload_past_the_spool_bound_gets_503_with_retry_after_keeps_nothing_and_gives_its_room_back()
    {
        var (_, key) = await NewCustomerAsync();
        var http = api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);

        var r = await http.UploadRawAsync(job, new byte[3 * Bound], "big.bin", "application/octet-stream");
        await AssertProblemAsync(r, HttpStatusCode.ServiceUnavailable);
        Assert.NotNull(r.Headers.RetryAfter);
        Assert.Empty(Directory.Exists(spool) ? Directory.EnumerateFiles(spool) : []);
        Assert.Equal(0, await this.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
        Assert.Equal(0, await this.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job", new { job }));

        // The refused upload's bytes were given back: one just under the bound fits.
        Assert.Equal(HttpStatusCode.Created, (await http.UploadRawAsync(job, new byte[Bound - (64 * 1024)], "fits.bin", "application/octet-stream")).StatusCode);
        Assert.Equal(1, await this.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }
}
