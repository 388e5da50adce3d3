// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// The USB host side of an emulated Pico: enumerates the device on rp2040js's USB controller and serves every CDC
// ACM function it finds, in descriptor order (port 0 is the first: MicroPython's only one, CircuitPython's
// console; port 1 is CircuitPython's data channel when boot.py enabled it).
//
// rp2040js's own helper (USBCDC) talks only to the last CDC data interface of the configuration and raises DTR
// only on interface 0; CircuitPython's usb_cdc.data then never sees a host. Here DTR and RTS go to every CDC
// communication interface, one control request after the other, and the device counts as connected once the
// last one is acknowledged.
//
// Flow control as a real host: bytes toward the device wait here until the device arms that port's OUT endpoint
// (a host NAKs until then), instead of overflowing a FIFO.
import { DataDirection, DescriptorType, SetupRecipient, SetupType, createSetupPacket, getDescriptorPacket,
  setDeviceAddressPacket, setDeviceConfigurationPacket } from 'rp2040js';

const CLASS_CDC = 2;
const CLASS_CDC_DATA = 10;
const CDC_SET_CONTROL_LINE_STATE = 0x22;
const DTR_RTS = 3;
const CONFIG_HEADER = 9;
const BULK = 2;

/** The CDC ACM functions of a configuration descriptor, in order: [{comm, in, out}] (comm: the communication
 * interface's number, where line state requests go; in/out: the data interface's bulk endpoint numbers). */
export function cdcFunctions(desc) {
  const found = [];
  let comm = null;
  let cur = null;
  for (let i = 0; i + 1 < desc.length;) {
    const len = desc[i];
    if (len < 2 || i + len > desc.length) break;
    const type = desc[i + 1];
    if (type === DescriptorType.Interface && len >= 9) {
      const number = desc[i + 2];
      const cls = desc[i + 5];
      if (cls === CLASS_CDC) {
        comm = number;
        cur = null;
      } else if (cls === CLASS_CDC_DATA && comm !== null) {
        cur = { comm, in: -1, out: -1 };
        found.push(cur);
        comm = null;
      } else {
        cur = null;
      }
    } else if (type === DescriptorType.Endpoint && len >= 7 && cur) {
      const address = desc[i + 2];
      if ((desc[i + 3] & 3) === BULK) {
        if (address & 0x80) cur.in = address & 0xf;
        else cur.out = address & 0xf;
      }
    }
    i += len;
  }
  return found.filter((f) => f.in >= 0 && f.out >= 0);
}

function lineState(iface) {
  return createSetupPacket({
    dataDirection: DataDirection.HostToDevice, type: SetupType.Class, recipient: SetupRecipient.Interface,
    bRequest: CDC_SET_CONTROL_LINE_STATE, wValue: DTR_RTS, wIndex: iface, wLength: 0,
  });
}

export class CdcHost {
  /** usb: rp2040js's RPUSBController; onConnected(); onSerial(port, bytes). */
  constructor(usb, { onConnected, onSerial } = {}) {
    this.usb = usb;
    this.ports = [];                  // cdcFunctions() of the device, once enumerated
    this.connected = false;
    this.state = 'idle';
    this.size = 0;
    this.desc = [];
    this.dtr = 0;
    this.waiting = [];                // per port: host -> device bytes not yet taken
    this.armed = [];                  // per port: [endpoint, size] of an OUT read the device armed, or null
    usb.onUSBEnabled = () => usb.resetDevice();
    usb.onResetReceived = () => {
      this.state = 'address';
      usb.sendSetupPacket(setDeviceAddressPacket(1));
    };
    usb.onEndpointWrite = (endpoint, buffer) => {
      if (endpoint === 0) {
        this._control(buffer);
        return;
      }
      const port = this.ports.findIndex((f) => f.in === endpoint);
      if (port >= 0 && onSerial) onSerial(port, buffer);
    };
    usb.onEndpointRead = (endpoint, size) => {
      const port = this.ports.findIndex((f) => f.out === endpoint);
      if (port < 0) return;
      if (this.waiting[port].length) this._deliver(port, endpoint, size);
      else this.armed[port] = [endpoint, size];
    };
    this._up = () => {
      this.connected = true;
      if (onConnected) onConnected();
    };
  }

  _control(buffer) {
    const usb = this.usb;
    switch (this.state) {
      case 'address':
        if (buffer.length === 0) {
          this.state = 'header';
          usb.sendSetupPacket(getDescriptorPacket(DescriptorType.Configration, CONFIG_HEADER));
        }
        break;
      case 'header':
        if (buffer.length >= 4 && buffer[1] === DescriptorType.Configration) {
          this.size = buffer[2] | (buffer[3] << 8);
          this.desc = [];
          this.state = 'config';
          usb.sendSetupPacket(getDescriptorPacket(DescriptorType.Configration, this.size));
        }
        break;
      case 'config':
        if (buffer.length) this.desc.push(...buffer);
        if (this.desc.length >= this.size) {
          this.ports = cdcFunctions(this.desc);
          this.waiting = this.ports.map(() => []);
          this.armed = this.ports.map(() => null);
          this.state = 'configure';
          usb.sendSetupPacket(setDeviceConfigurationPacket(1));
        }
        break;
      case 'configure':
      case 'line':
        if (buffer.length !== 0) break;
        if (this.state === 'configure') this.dtr = 0;
        else this.dtr++;
        if (this.dtr < this.ports.length) {
          this.state = 'line';
          usb.sendSetupPacket(lineState(this.ports[this.dtr].comm));
        } else {
          this.state = 'up';
          this._up();
        }
        break;
      default:
        break;
    }
  }

  _deliver(port, endpoint, size) {
    const w = this.waiting[port];
    const buf = Uint8Array.from(w.splice(0, Math.min(size, w.length)));
    this.usb.endpointReadDone(endpoint, buf);
  }

  /** Bytes from the host toward the device on one port (dropped while that port does not exist). */
  send(port, bytes) {
    if (port >= this.ports.length) return false;
    const w = this.waiting[port];
    for (const b of bytes) w.push(b);
    const a = this.armed[port];
    if (a && w.length) {
      this.armed[port] = null;
      this._deliver(port, a[0], a[1]);
    }
    return true;
  }
}
