using System.Security.Cryptography;
using System.Text;
using Dapper;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

public sealed class SecretsTests(DatabaseFixture db) : IClassFixture<DatabaseFixture>
{
    [Fact]
    public async Task An_issued_key_is_stored_only_as_its_sha256_hash_with_a_visible_prefix()
    {
        var (tenant, secret) = await db.NewCustomerAsync();
        await using var conn = await db.DataSource.OpenConnectionAsync();
        var row = await conn.QuerySingleAsync<(string Prefix, byte[] Hash)>("SELECT prefix, key_hash FROM api_keys WHERE tenant_id = @Id", new { tenant.Id });

        Assert.Equal(SHA256.HashData(Encoding.UTF8.GetBytes(secret)), row.Hash);
        Assert.StartsWith(row.Prefix, secret, StringComparison.Ordinal);
        Assert.True(secret.Length >= 3 + 22, "at least 128 random bits after the prefix");
        var dump = string.Join("|", await conn.QueryAsync<string>("SELECT CONCAT_WS('|', id, COALESCE(tenant_id,''), role, prefix, HEX(key_hash), COALESCE(label,'')) FROM api_keys"));
        Assert.DoesNotContain(secret, dump, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_technician_password_is_stored_hashed_and_still_verifies()
    {
        const string password = "correct horse battery staple";
        var login = "tech-" + Guid.NewGuid().ToString("N")[..8];
        await db.Technicians.CreateAsync(login, password, default);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        var stored = await conn.QuerySingleAsync<string>("SELECT password_hash FROM technicians WHERE login = @login", new { login });

        Assert.DoesNotContain(password, stored, StringComparison.Ordinal);
        Assert.Equal(TechnicianSignIn.Success, (await db.Technicians.SignInAsync(login, password, default)).Result);
        Assert.Equal(TechnicianSignIn.Failed, (await db.Technicians.SignInAsync(login, "wrong password!", default)).Result);
    }

    [Fact]
    public async Task Repeated_wrong_passwords_lock_the_technician_out_even_with_the_right_password()
    {
        const string password = "another long password";
        var login = "tech-" + Guid.NewGuid().ToString("N")[..8];
        await db.Technicians.CreateAsync(login, password, default);
        for (var i = 0; i < TechnicianService.MaxFailures; i++)
        {
            await db.Technicians.SignInAsync(login, "nope nope nope", default);
        }
        Assert.Equal(TechnicianSignIn.LockedOut, (await db.Technicians.SignInAsync(login, password, default)).Result);
    }

    [Fact]
    public async Task A_revoked_key_no_longer_resolves()
    {
        var (_, secret) = await db.NewCustomerAsync();
        var principal = await db.Keys.ResolveAsync(secret, default);
        Assert.NotNull(principal);
        Assert.True(await db.Keys.RevokeAsync(principal.KeyId, default));
        Assert.Null(await db.Keys.ResolveAsync(secret, default));
    }
}
